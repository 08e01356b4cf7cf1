// goclient: a grpc-go client of xip83-gateway's server-streaming methods,
// for tests/grpc/t_gateway_headers.py. It sends one request given as hex
// bytes (a raw codec: no generated code), then prints "headers NAME=VALUE..."
// when Header() returns, and "message HEX" for each message that follows,
// until the stream ends ("end CODE MESSAGE"). Header() must return within
// -within, before any message: grpc-go blocks in it until the server sends
// its response headers.
//
//	goclient -target 127.0.0.1:PORT -method /pkg.Service/Method -request HEX
package main

import (
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// rawCodec sends and receives messages as the bytes they are.
type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error) { return *(v.(*[]byte)), nil }

func (rawCodec) Unmarshal(data []byte, v interface{}) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

func main() {
	target := flag.String("target", "", "host:port of the gateway (h2c)")
	method := flag.String("method", "", "the method's path")
	request := flag.String("request", "", "the request's bytes in hex")
	within := flag.Duration("within", 5*time.Second, "Header() must return within this")
	count := flag.Int("messages", 1, "messages to read before leaving")
	flag.Parse()
	req, err := hex.DecodeString(*request)
	if err != nil {
		fail("bad -request: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := grpc.DialContext(ctx, *target, grpc.WithInsecure(), grpc.WithBlock())
	if err != nil {
		fail("dial %s: %v", *target, err)
	}
	defer conn.Close()
	st, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, *method, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		fail("stream: %v", err)
	}
	if err := st.SendMsg(&req); err != nil {
		fail("send: %v", err)
	}
	if err := st.CloseSend(); err != nil {
		fail("close send: %v", err)
	}
	t0 := time.Now()
	got := make(chan error, 1)
	var md map[string][]string
	go func() {
		h, err := st.Header()
		md = h
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			fail("Header(): %v", err)
		}
	case <-time.After(*within):
		fail("Header() did not return within %v", *within)
	}
	var pairs []string
	for k, vs := range md {
		for _, v := range vs {
			pairs = append(pairs, k+"="+v)
		}
	}
	sort.Strings(pairs)
	fmt.Printf("headers %s after %d ms\n", strings.Join(pairs, " "), time.Since(t0).Milliseconds())
	for i := 0; i < *count; i++ {
		var m []byte
		if err := st.RecvMsg(&m); err != nil {
			s := status.Convert(err)
			fmt.Printf("end %s %s\n", s.Code(), s.Message())
			return
		}
		fmt.Printf("message %s\n", hex.EncodeToString(m))
	}
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "goclient: "+format+"\n", args...)
	os.Exit(1)
}
