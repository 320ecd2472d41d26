package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/devkit-go/devkit/internal/jsonschema"
	"github.com/devkit-go/devkit/kvstore/server/httpapi"
	"github.com/devkit-go/devkit/kvstore/server/internal/servertest"
)

// TestJSON_EveryEndpointKeepsTheSchemaRule walks the JSON of every
// endpoint (the metrics view with the engine's Stats, health, key pages,
// errors): snake_case names, durations as float seconds in _seconds fields
// (the metrics view gave replay_duration_ns).
func TestJSON_EveryEndpointKeepsTheSchemaRule(t *testing.T) {
	db := servertest.OpenDB(t)
	_, base := serve(t, db, httpapi.Options{})
	do(t, http.MethodPut, base+"/keys/a", strings.NewReader("1"))
	for _, path := range []string{"/metrics", "/health", "/keys", "/keys?encoding=base64&limit=1", "/keys/missing", "/nowhere"} {
		resp, body := do(t, http.MethodGet, base+path, nil, "Accept", "application/json")
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("GET %s: Content-Type %q, want JSON", path, ct)
		}
		problems, err := jsonschema.Check(body)
		if err != nil || len(problems) > 0 {
			t.Errorf("GET %s: %s breaks the schema rule: %q %v", path, body, problems, err)
		}
	}
}
