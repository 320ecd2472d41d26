package supervisor_test

import (
	"fmt"
	"os"

	"github.com/devkit-go/devkit/supervisor"
)

func ExampleParseConfig() {
	yaml := []byte(`
processes:
  api:
    command: ./api
    args: ["--port", "${DEVKIT_EXAMPLE_API_PORT:-8080}"]
    depends_on: [db]
    ready: {http: "http://127.0.0.1:${DEVKIT_EXAMPLE_API_PORT:-8080}/healthz", timeout: 10s}
    restart: on-failure
  db:
    command: redis-server
    ready: {tcp: "127.0.0.1:6379"}
`)
	cfg, err := supervisor.ParseConfig("ops.yaml", yaml, os.LookupEnv)
	if err != nil {
		fmt.Println(err)
		return
	}
	api := cfg.Processes["api"]
	fmt.Println("start order:", cfg.Order)
	fmt.Println("api args:", api.Args)
	fmt.Println("api ready:", api.Ready.HTTP, api.Ready.Timeout)
	fmt.Println("api restart:", api.Restart.Mode, "stop timeout:", api.StopTimeout)
	// Output:
	// start order: [db api]
	// api args: [--port 8080]
	// api ready: http://127.0.0.1:8080/healthz 10s
	// api restart: on-failure stop timeout: 10s
}

func ExampleParseConfig_errors() {
	_, err := supervisor.ParseConfig("ops.yaml", []byte(`
processes:
  kv:
    command: devkit
    stop_timeout: ten
`), os.LookupEnv)
	fmt.Println(err)
	// Output:
	// ops.yaml:5: processes.kv.stop_timeout: "ten" is not a duration
}

func ExampleRestartPolicy_Delay() {
	p := supervisor.RestartPolicy{Mode: supervisor.RestartOnFailure, Backoff: supervisor.DefaultBackoff, MaxBackoff: 3 * supervisor.DefaultBackoff}
	for n := 1; n <= 4; n++ {
		fmt.Println(n, p.Delay(n))
	}
	// Output:
	// 1 500ms
	// 2 1s
	// 3 1.5s
	// 4 1.5s
}
