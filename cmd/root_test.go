package cmd

import (
	"os"
	"regexp"
	"testing"
)

// The binary's doc (main.go) names every subcommand the root command has, and no other.
func TestMainDocListsEverySubcommand(t *testing.T) {
	src, err := os.ReadFile("../main.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := regexp.MustCompile(`(?s)^(.*?)\npackage main`).FindSubmatch(src)
	if doc == nil {
		t.Fatal("main.go has no package doc")
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^//   - (.+?):|^//   - (\w+)\.$`).FindAllSubmatch(doc[1], -1) {
		names := string(m[1]) + string(m[2])
		for _, n := range regexp.MustCompile(`[a-z]+`).FindAllString(names, -1) {
			listed[n] = true
		}
	}
	have := map[string]bool{}
	for _, c := range NewRoot().Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		have[c.Name()] = true
		if !listed[c.Name()] {
			t.Errorf("main.go's doc does not list the subcommand %q", c.Name())
		}
		for _, sub := range c.Commands() {
			if !listed[sub.Name()] {
				t.Errorf("main.go's doc does not list %q %q", c.Name(), sub.Name())
			}
		}
	}
	if len(have) < 12 {
		t.Fatalf("the root command has %d subcommands: %v", len(have), have)
	}
	for n := range listed {
		found := have[n]
		for _, c := range NewRoot().Commands() {
			for _, sub := range c.Commands() {
				found = found || sub.Name() == n
			}
		}
		if !found {
			t.Errorf("main.go's doc lists %q, which is no subcommand", n)
		}
	}
}
