package llm

import (
	"net"
	"net/http"
)

// NewTransportUnder is NewTransport with under wrapping each connection
// beneath the one that writes request bodies from their bytes.
func NewTransportUnder(under func(net.Conn) net.Conn) *http.Transport { return newTransport(under) }
