package tcpjson_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/tcpjson"
)

func Example() {
	dir, _ := os.MkdirTemp("", "tcpjson-example")
	defer os.RemoveAll(dir)
	db, err := kvstore.Open(dir, kvstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := tcpjson.NewServer(db, tcpjson.Options{})
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())

	ctx := context.Background()
	c, err := tcpjson.Dial(ctx, ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	c.Set(ctx, []byte("user:1"), []byte("alice"))
	c.Set(ctx, []byte("user:2"), []byte{0xff, 0x00}) // binary: travels as value_b64
	v, _ := c.Get(ctx, []byte("user:1"))
	fmt.Printf("%s\n", v)
	page, _ := c.Keys(ctx, kvstore.ScanOptions{Prefix: []byte("user:")})
	fmt.Printf("%q\n", page.Keys)
	_, err = c.Get(ctx, []byte("user:3"))
	fmt.Println(errors.Is(err, kvstore.ErrNotFound))
	// Output:
	// alice
	// ["user:1" "user:2"]
	// true
}
