package release

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
)

// The licence identifiers (SPDX) Classify recognises.
const (
	Apache2 = "Apache-2.0"
	MIT     = "MIT"
	BSD2    = "BSD-2-Clause"
	BSD3    = "BSD-3-Clause"
	BSD4    = "BSD-4-Clause"
	ISC     = "ISC"
	MPL2    = "MPL-2.0"
	GPL     = "GPL-family" // GPL, LGPL, AGPL: any text of the family
)

// phrases are the wording that identifies each licence, normalised as
// normalise spells it; a licence matches when every phrase is present.
var phrases = []struct {
	id  string
	all []string
}{
	{Apache2, []string{"apache license", "version 2 0"}},
	{MIT, []string{"permission is hereby granted free of charge to any person obtaining a copy",
		"the above copyright notice and this permission notice shall be included"}},
	{ISC, []string{"permission to use copy modify and", "distribute this software for any purpose with or without fee is hereby granted"}},
	{MPL2, []string{"mozilla public license", "2 0"}},
}

const (
	bsdGrant    = "redistribution and use in source and binary forms with or without modification are permitted"
	bsdEndorse  = "to endorse or promote products derived from this software without specific prior written permission"
	bsdAdvert   = "all advertising materials mentioning features or use of this software must display"
	gplVerbatim = "everyone is permitted to copy and distribute verbatim copies of this license document"
	gplNotice   = "general public license as published by the free software foundation"
)

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

// normalise lowercases text and turns every run of other characters
// (spaces, line breaks, punctuation, comment markers) into one space, so
// wrapping and quoting never hide a phrase.
func normalise(text string) string {
	return " " + strings.TrimSpace(nonWord.ReplaceAllString(strings.ToLower(text), " ")) + " "
}

// Classify returns the licences whose wording text contains, sorted; none
// when it recognises nothing. A file that bundles several licences (MIT
// for some files, Apache-2.0 for the rest) yields each of them.
func Classify(text string) []string {
	t := normalise(text)
	var ids []string
	for _, p := range phrases {
		if containsAll(t, p.all) {
			ids = append(ids, p.id)
		}
	}
	if strings.Contains(t, bsdGrant) {
		switch {
		case strings.Contains(t, bsdAdvert):
			ids = append(ids, BSD4)
		case strings.Contains(t, bsdEndorse):
			ids = append(ids, BSD3)
		default:
			ids = append(ids, BSD2)
		}
	}
	if strings.Contains(t, gplVerbatim) || strings.Contains(t, gplNotice) {
		ids = append(ids, GPL)
	}
	slices.Sort(ids)
	return ids
}

func containsAll(t string, all []string) bool {
	for _, s := range all {
		if !strings.Contains(t, " "+s+" ") {
			return false
		}
	}
	return true
}

var licenseName = regexp.MustCompile(`(?i)^(licen[cs]e|copying)([.-].*)?$`)

// LicenseFiles returns the licence files at the top of dir (LICENSE,
// LICENCE, COPYING, with any extension or suffix, any case), sorted.
func LicenseFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && licenseName.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// Module is a module that provides a package to a build.
type Module struct {
	Path, Version string
	Dir           string // in the module cache
}

// BuildModules lists the modules, other than the main one, that provide a
// package pkg depends on when built with env added (e.g. GOOS=darwin),
// sorted by path. It runs `go list -deps` in dir.
func BuildModules(dir, pkg string, env ...string) ([]Module, error) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}\t{{.Version}}\t{{.Dir}}{{end}}{{end}}", pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s %v: %v: %s", pkg, env, err, stderr.String())
	}
	seen := map[string]bool{}
	var mods []Module
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 || seen[f[0]] {
			continue
		}
		seen[f[0]] = true
		mods = append(mods, Module{Path: f[0], Version: f[1], Dir: f[2]})
	}
	slices.SortFunc(mods, func(a, b Module) int { return strings.Compare(a.Path, b.Path) })
	return mods, nil
}
