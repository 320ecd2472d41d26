package kvstore_test

import (
	"fmt"
	"log"
	"os"

	"github.com/devkit-go/devkit/kvstore"
)

func Example() {
	dir, err := os.MkdirTemp("", "kvstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// The zero Options are the strict default: every acknowledged write is on disk.
	db, err := kvstore.Open(dir, kvstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	for _, k := range []string{"user:1", "user:2", "order:7"} {
		if err := db.Set([]byte(k), []byte("v-"+k)); err != nil {
			log.Fatal(err)
		}
	}
	v, _ := db.Get([]byte("user:2"))
	fmt.Printf("%s\n", v)

	page, _ := db.Scan(kvstore.ScanOptions{Prefix: []byte("user:")})
	for _, e := range page.Entries {
		fmt.Printf("%s=%s\n", e.Key, e.Value)
	}
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}

	// Reopening replays the log.
	db, _ = kvstore.Open(dir, kvstore.Options{})
	defer db.Close()
	fmt.Println(db.Len(), "keys after reopen")
	// Output:
	// v-user:2
	// user:1=v-user:1
	// user:2=v-user:2
	// 3 keys after reopen
}

// A memory-only store is a cache: no directory, no file, nothing survives
// Close.
func ExampleOpen_memoryOnly() {
	db, err := kvstore.Open("", kvstore.Options{MemoryOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := db.Set([]byte("session:42"), []byte("alice")); err != nil {
		log.Fatal(err)
	}
	v, _ := db.Get([]byte("session:42"))
	fmt.Printf("%s %v %q\n", v, db.MemoryOnly(), db.Dir())
	// Output:
	// alice true ""
}
