package cmdutil

import (
	"strings"
	"testing"
)

func TestJSONObject_JoinsPartsAndRefusesAClash(t *testing.T) {
	type report struct {
		Keys int    `json:"keys"`
		Dir  string `json:"dir"`
	}
	type verdict struct {
		Clean   bool   `json:"clean"`
		Problem string `json:"problem,omitempty"`
	}
	b, err := JSONObject(report{3, "d"}, verdict{Clean: true}, struct{}{})
	if err != nil || string(b) != `{"keys":3,"dir":"d","clean":true}` {
		t.Fatalf("JSONObject = %s, %v", b, err)
	}
	if _, err := JSONObject(report{}, struct {
		Dir string `json:"dir"`
	}{}); err == nil || !strings.Contains(err.Error(), `"dir"`) {
		t.Fatalf("a name given twice: %v, want an error naming it", err)
	}
	if _, err := JSONObject(report{}, []int{1}); err == nil {
		t.Fatal("a part that is not an object was accepted")
	}
}
