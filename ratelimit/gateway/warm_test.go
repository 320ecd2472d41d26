//go:build unix

package gateway_test

import (
	"context"
	"testing"

	"github.com/devkit-go/devkit/ratelimit/gateway"
	"github.com/devkit-go/devkit/ratelimit/redisstore"
	"github.com/devkit-go/devkit/ratelimit/redistest"
)

// A gateway warms its store when it starts: by the time Listen returns,
// the policy's limits are registered in Redis (and the connections and
// scripts are ready, redisstore's TestWarm_), so the first burst does not
// spend its budget on them. Before, the registry was empty until the first
// request.
func TestGateway_ListenWarmsTheStoreForThePolicysLimits(t *testing.T) {
	rs := redistest.StartRedis(t)
	up, _ := countingApp(t)
	startGateway(t, "http://"+up, `
defaults: {plan: free}
rules:
  - {name: login, paths: [/auth/login], scope: global, key: [ip], limits: [{limit: 100, window: 15m, block: 1h}]}
  - name: api
    paths: [/api]
    scope: tenant
    key: [tenant]
    plans:
      free: {"*": [{limit: 10, window: 1m}]}
      pro: {"*": [{limit: 50, window: 1m}, {algorithm: gcra, limit: 5, window: 1s}]}
`, gateway.Config{Limiter: limiterOn(t, rs), Logger: discardLogger()})
	ids, err := rs.Client(t).ZRange(context.Background(), redisstore.DefaultPrefix+"lean-ids", 0, -1).Result()
	if err != nil || len(ids) != 4 {
		t.Fatalf("registered limit ids after start: %v %v, want the policy's 4", ids, err)
	}
}
