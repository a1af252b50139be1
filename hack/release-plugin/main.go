/*
Copyright 2026 The paymentjob-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command release-plugin builds the release files of the kubectl payments
// plugin (make release-plugin), offline: for each platform an archive
// kubectl-payments_<version>_<os>_<arch>.tar.gz holding kubectl-payments,
// kubectl_complete-payments (kubectl's plugin completion, 1.26 and later)
// and LICENSE when the repository has one; checksums.txt with the sha256 of
// each archive; and the Krew manifest payments.yaml, rendered from
// hack/krew/payments.yaml.tmpl with the version and those sha256s.
// test/manifests (TestReleasePlugin) runs it for one platform.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"
	"time"
)

// completeScript is kubectl_complete-payments: kubectl (1.26 and later)
// runs it to complete `kubectl payments ...`, and it asks the plugin
// (cobra's __complete).
const completeScript = "#!/bin/sh\n# kubectl runs this to complete `kubectl payments ...` (kubectl 1.26 and later).\nexec kubectl-payments __complete \"$@\"\n"

// Platform is one os/arch of the release and its archive.
type Platform struct {
	OS, Arch string
	// Archive is the archive's file name, SHA256 its checksum in hex.
	Archive, SHA256 string
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "release-plugin: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var version, platforms, out, tmpl, license, prebuilt string
	flag.StringVar(&version, "version", "", "The release version, without the v (0.1.0).")
	flag.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64", "Comma list of os/arch to build.")
	flag.StringVar(&out, "out", "dist/release", "Folder for the archives, checksums.txt and payments.yaml.")
	flag.StringVar(&tmpl, "template", "hack/krew/payments.yaml.tmpl", "The Krew manifest's template.")
	flag.StringVar(&license, "license", "LICENSE", "A file to put into each archive; skipped when it does not exist.")
	flag.StringVar(&prebuilt, "prebuilt", "", "Package this kubectl-payments (make build-plugin's) for the one platform of -platforms instead of "+
		"building it; it must print -version. Used by the release test to spare a second build.")
	flag.Parse()
	if version == "" || strings.HasPrefix(version, "v") {
		return fmt.Errorf("-version must name the release without a leading v (0.1.0), not %q", version)
	}
	manifest, err := template.New(filepath.Base(tmpl)).Option("missingkey=error").ParseFiles(tmpl)
	if err != nil {
		return fmt.Errorf("cannot read the Krew template: %w", err)
	}
	licenseText, err := os.ReadFile(license)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cannot read %s: %w", license, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var built []Platform
	var sums strings.Builder
	for _, p := range strings.Split(platforms, ",") {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || goos == "" || goarch == "" {
			return fmt.Errorf("-platforms: %q is not os/arch", p)
		}
		pl := Platform{OS: goos, Arch: goarch, Archive: fmt.Sprintf("kubectl-payments_%s_%s_%s.tar.gz", version, goos, goarch)}
		fmt.Printf("Building %s\n", pl.Archive)
		bin, err := binary(prebuilt, version, goos, goarch, platforms)
		if err != nil {
			return err
		}
		files := []file{{"kubectl-payments", bin, 0o755}, {"kubectl_complete-payments", []byte(completeScript), 0o755}}
		if licenseText != nil {
			files = append(files, file{"LICENSE", licenseText, 0o644})
		}
		archive, err := tarGz(files)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, pl.Archive), archive, 0o644); err != nil {
			return err
		}
		sum := sha256.Sum256(archive)
		pl.SHA256 = hex.EncodeToString(sum[:])
		fmt.Fprintf(&sums, "%s  %s\n", pl.SHA256, pl.Archive)
		built = append(built, pl)
	}
	if err := os.WriteFile(filepath.Join(out, "checksums.txt"), []byte(sums.String()), 0o644); err != nil {
		return err
	}
	var rendered bytes.Buffer
	if err := manifest.Execute(&rendered, struct {
		Version   string
		Platforms []Platform
	}{version, built}); err != nil {
		return fmt.Errorf("cannot render the Krew manifest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(out, "payments.yaml"), rendered.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Printf("Wrote %d archives, checksums.txt and payments.yaml to %s\n", len(built), out)
	return nil
}

// binary is the plugin for goos/goarch: built, or the prebuilt one when
// it is the only platform and prints version.
func binary(prebuilt, version, goos, goarch, platforms string) ([]byte, error) {
	if prebuilt == "" {
		return build(version, goos, goarch)
	}
	if strings.Contains(platforms, ",") {
		return nil, errors.New("-prebuilt packages one platform: give one in -platforms")
	}
	printed, err := exec.Command(prebuilt, "version").Output()
	if err != nil {
		return nil, fmt.Errorf("cannot run %s version: %w", prebuilt, err)
	}
	if got := strings.TrimSpace(string(printed)); got != version {
		return nil, fmt.Errorf("%s prints version %q, not -version %q", prebuilt, got, version)
	}
	return os.ReadFile(prebuilt)
}

// build cross-compiles the plugin, static and without local paths, and
// returns the binary.
func build(version, goos, goarch string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "release-plugin-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin := filepath.Join(dir, "kubectl-payments")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+version, "-o", bin, "./cmd/kubectl-payments")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("cannot build kubectl-payments for %s/%s: %w", goos, goarch, err)
	}
	return os.ReadFile(bin)
}

// file is one member of an archive.
type file struct {
	name string
	data []byte
	mode int64
}

// tarGz packs files into a gzipped tar, with fixed times and owners so that
// the same input gives the same archive.
func tarGz(files []file) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	mtime := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range files {
		hdr := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := io.Copy(tw, bytes.NewReader(f.data)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
