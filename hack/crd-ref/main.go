// Command crd-ref writes the Markdown reference of the ragops custom resources from the Go
// types in api/v1alpha1: every kind with its spec and status fields, every nested type, and
// every enumeration with its values. Descriptions are the fields' doc comments; defaults,
// enumerations, bounds and CEL rules come from the kubebuilder markers (the same markers
// controller-gen turns into the CRDs' OpenAPI schemas).
//
//	go run ./hack/crd-ref -api api/v1alpha1 -o docs/reference.md
//
// hack/gen-crd-ref.sh runs it; its test checks that docs/reference.md is up to date and that
// it names every property of the generated CRDs.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	dir := flag.String("api", "api/v1alpha1", "folder of the API types package")
	out := flag.String("o", "", "output file (default standard output)")
	flag.Parse()
	md, err := Generate(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crd-ref:", err)
		os.Exit(1)
	}
	if *out == "" {
		_, err = os.Stdout.Write(md)
	} else {
		err = os.WriteFile(*out, md, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crd-ref:", err)
		os.Exit(1)
	}
}
