package httpapi_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/devkit-go/devkit/kvstore"
	"github.com/devkit-go/devkit/kvstore/server/httpapi"
)

// The handler mounts in any Go HTTP server; here under /kv/.
func Example() {
	dir, _ := os.MkdirTemp("", "httpapi-example")
	defer os.RemoveAll(dir)
	db, err := kvstore.Open(dir, kvstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	mux := http.NewServeMux()
	mux.Handle("/kv/", http.StripPrefix("/kv", httpapi.New(db, httpapi.Options{})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/kv/keys/greeting", strings.NewReader("hello"))
	resp, _ := http.DefaultClient.Do(req)
	fmt.Println("PUT", resp.StatusCode)

	resp, _ = http.Get(srv.URL + "/kv/keys/greeting")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println("GET", resp.StatusCode, string(body))

	resp, _ = http.Get(srv.URL + "/kv/keys/missing")
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print("GET ", resp.StatusCode, " ", string(body))
	// Output:
	// PUT 204
	// GET 200 hello
	// GET 404 {"error":"kvstore: key not found","code":"not_found"}
}
