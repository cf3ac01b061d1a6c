// Command hello is the start-up baseline of TestStartupGuard: the
// smallest Go program, against which `polly --version` is compared.
package main

import "fmt"

func main() { fmt.Println("hello") }
