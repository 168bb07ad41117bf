package release

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/licenses.md from the build graph")

// allowed are the licences a linked module may have: Apache-2.0 and the
// permissive licences compatible with it.
var allowed = []string{Apache2, MIT, BSD2, BSD3, ISC}

// mplAllowed names the modules allowed to be MPL-2.0, with why; a module
// newly under MPL-2.0 fails the test until it is justified here.
// None is linked today.
var mplAllowed = map[string]string{}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []string
	}{
		{"mit", "Permission is hereby granted, free of charge, to any person obtaining a copy\nof this software ... The above copyright notice and this\npermission notice shall be included in all copies", []string{MIT}},
		{"isc", "Permission to use, copy, modify, and/or distribute this software for any\npurpose with or without fee is hereby granted, provided that", []string{ISC}},
		{"bsd-2", "Redistribution and use in source and binary forms, with or without\nmodification, are permitted provided that the following conditions are met:", []string{BSD2}},
		{"bsd-3", "Redistribution and use in source and binary forms, with or without modification, are permitted ...\n* Neither the name of Google Inc. nor the names of its contributors may be used to endorse or promote products derived from this software without specific prior written permission.", []string{BSD3}},
		{"bsd-4", "Redistribution and use in source and binary forms, with or without modification, are permitted ... 3. All advertising materials mentioning features or use of this software must display the following", []string{BSD4}},
		{"apache notice", `Licensed under the Apache License, Version 2.0 (the "License");`, []string{Apache2}},
		{"apache 1.1", "The Apache Software License, Version 1.1", nil},
		{"mit and apache", "MIT License ... Permission is hereby granted, free of charge, to any person obtaining a copy ... The above copyright notice and this permission notice shall be included ...\n### Apache License ###\nLicensed under the Apache License, Version 2.0", []string{Apache2, MIT}},
		{"gpl notice", "This program is free software: you can redistribute it and/or modify it under the terms of the GNU General Public License as published by the Free Software Foundation", []string{GPL}},
		{"unknown", "All rights reserved.", nil},
	} {
		if got := Classify(c.text); !slices.Equal(got, c.want) {
			t.Errorf("%s: Classify = %v, want %v", c.name, got, c.want)
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if got := Classify(string(b)); !slices.Equal(got, []string{Apache2}) {
		t.Errorf("LICENSE: Classify = %v, want [Apache-2.0]", got)
	}
	// The full texts, where the system has them (Debian's base-files).
	for file, want := range map[string][]string{"Apache-2.0": {Apache2}, "BSD": {BSD3}, "MPL-2.0": {MPL2},
		"GPL-2": {GPL}, "GPL-3": {GPL}, "LGPL-2.1": {GPL}, "LGPL-3": {GPL}} {
		b, err := os.ReadFile(filepath.Join("/usr/share/common-licenses", file))
		if err != nil {
			continue
		}
		if got := Classify(string(b)); !slices.Equal(got, want) {
			t.Errorf("/usr/share/common-licenses/%s: Classify = %v, want %v", file, got, want)
		}
	}
}

// licensed is a linked module with what its licence files say.
type licensed struct {
	Module
	files []string
	ids   []string
}

// TestDependencyLicences checks every module linked into ./cmd/signalbox,
// on every release target and in a cgo build, has licence files Classify recognises, all of
// them allowed, and that docs/licenses.md lists exactly these modules
// (go test ./internal/release -run TestDependencyLicences -update
// rewrites it).
func TestDependencyLicences(t *testing.T) {
	g := readGoreleaser(t)
	byPath := map[string]Module{}
	var envs [][]string
	for _, tg := range g.targets() {
		envs = append(envs, []string{"GOOS=" + tg.goos, "GOARCH=" + tg.goarch, "CGO_ENABLED=0"})
	}
	// `go install` with a C compiler builds with cgo, which links more.
	envs = append(envs, []string{"GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=1"})
	for _, env := range envs {
		mods, err := BuildModules(root, "./cmd/signalbox", env...)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mods {
			byPath[m.Path] = m
		}
	}
	if len(byPath) < 10 {
		t.Fatalf("only %d modules in the build graph: go list is not listing what it should", len(byPath))
	}
	var all []licensed
	for _, m := range byPath {
		l := licensed{Module: m}
		files, err := LicenseFiles(m.Dir)
		if err != nil {
			t.Errorf("%s: %v", m.Path, err)
			continue
		}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(m.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			ids := Classify(string(b))
			if len(ids) == 0 {
				t.Errorf("%s@%s: %s names no licence Classify recognises", m.Path, m.Version, f)
				continue
			}
			l.files = append(l.files, f)
			l.ids = append(l.ids, ids...)
		}
		slices.Sort(l.ids)
		l.ids = slices.Compact(l.ids)
		if len(l.ids) == 0 {
			t.Errorf("%s@%s: no licence found in %s", m.Path, m.Version, m.Dir)
		}
		for _, id := range l.ids {
			if id == MPL2 && mplAllowed[m.Path] != "" {
				continue
			}
			if !slices.Contains(allowed, id) {
				t.Errorf("%s@%s: licence %s is not allowed (allowed: %v; MPL-2.0 only for %v)", m.Path, m.Version, id, allowed, mapKeys(mplAllowed))
			}
		}
		all = append(all, l)
	}
	slices.SortFunc(all, func(a, b licensed) int { return strings.Compare(a.Path, b.Path) })
	for p := range mplAllowed {
		if _, ok := byPath[p]; !ok {
			t.Errorf("mplAllowed names %s, which is no longer linked: remove it", p)
		}
	}
	doc := renderLicenses(all)
	path := filepath.Join(root, "docs", "licenses.md")
	if *update {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != doc {
		t.Errorf("docs/licenses.md is out of date with the build graph; rewrite it with\n\tgo test ./internal/release -run TestDependencyLicences -update\nwant:\n%s", doc)
	}
}

func mapKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func renderLicenses(mods []licensed) string {
	var b strings.Builder
	b.WriteString(`# Licences of the dependencies

signalbox is licensed under the Apache License 2.0 ([LICENSE](../LICENSE)).
The ` + "`signalbox`" + ` binary links the Go standard library (BSD-3-Clause) and
the modules below: every module ` + "`go list -deps ./cmd/signalbox`" + ` names for
any release target in [.goreleaser.yaml](../.goreleaser.yaml) (built without
cgo), or for a cgo build (` + "`go install`" + ` with a C compiler adds
github.com/DataDog/zstd). Modules used only by tests and benchmarks are not
shipped and not listed.

Generated by ` + "`go test ./internal/release -run TestDependencyLicences -update`" + `
from the licence files in the module cache; that test fails when this list
and the build graph disagree, or when a module's licence is not one of
` + strings.Join(allowed, ", ") + ` (MPL-2.0 only for a module justified in
internal/release/licenses_test.go` + mplNote() + `).

| module | version | licence | file |
|---|---|---|---|
`)
	for _, m := range mods {
		fmt.Fprintf(&b, "| [%s](https://pkg.go.dev/%s@%s) | %s | %s | %s |\n", m.Path, m.Path, m.Version, m.Version,
			strings.Join(m.ids, ", "), strings.Join(m.files, ", "))
	}
	if len(mplAllowed) > 0 {
		b.WriteString("\n## MPL-2.0\n\n")
	}
	for _, p := range mapKeys(mplAllowed) {
		fmt.Fprintf(&b, "- %s: %s\n", p, mplAllowed[p])
	}
	return b.String()
}

// mplNote says whether any module is MPL-2.0 today.
func mplNote() string {
	if len(mplAllowed) == 0 {
		return ": none is linked today"
	}
	return ", listed below"
}
