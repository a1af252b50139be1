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

package manifests_test

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// krewPlugin is what TestReleasePlugin reads of the Krew manifest.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
		} `json:"platforms"`
	} `json:"spec"`
}

// TestReleasePlugin runs hack/release-plugin (make release-plugin) for the
// platform of this machine (linux/amd64 in CI) into a temporary folder and
// checks what a user of Krew or of the release page receives: an archive
// whose kubectl-payments runs and prints the release's version, with the
// completion script beside it; a Krew manifest with the archive's sha256;
// and checksums.txt that agrees.
func TestReleasePlugin(t *testing.T) {
	g := NewWithT(t)
	root := repoRoot(t)
	goBin, err := exec.LookPath("go")
	g.Expect(err).NotTo(HaveOccurred(), "the release is built with the go command, which is not on PATH")
	version := "0.0.0-test"
	platform := runtime.GOOS + "/" + runtime.GOARCH
	args := []string{"run", "./hack/release-plugin", "-platforms", platform}
	// make test-installer hands over make build-plugin's binary and its
	// version: packaging it spares a second build of the plugin (over a
	// minute on a cold cache, for other build flags). Without it, the
	// program builds the plugin as a release does.
	if prebuilt := os.Getenv("KUBECTL_PAYMENTS"); prebuilt != "" {
		abs, err := filepath.Abs(prebuilt)
		g.Expect(err).NotTo(HaveOccurred())
		version = os.Getenv("PLUGIN_VERSION")
		g.Expect(version).NotTo(BeEmpty(), "KUBECTL_PAYMENTS comes with PLUGIN_VERSION, the version it was built with")
		args = append(args, "-prebuilt", abs)
	}
	archive := fmt.Sprintf("kubectl-payments_%s_%s_%s.tar.gz", version, runtime.GOOS, runtime.GOARCH)
	out := t.TempDir()

	start := time.Now()
	cmd := exec.Command(goBin, append(args, "-version", version, "-out", out)...)
	cmd.Dir = root
	combined, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "hack/release-plugin failed:\n%s", combined)
	t.Logf("hack/release-plugin for %s took %s", platform, time.Since(start).Round(time.Second))

	data, err := os.ReadFile(filepath.Join(out, archive))
	g.Expect(err).NotTo(HaveOccurred(), "the archive %s was not written", archive)
	sum := sha256.Sum256(data)
	archiveSum := hex.EncodeToString(sum[:])

	t.Run("the archive holds an executable kubectl-payments that prints the version, and the completion script", func(t *testing.T) {
		g := NewWithT(t)
		members := untarGz(t, filepath.Join(out, archive))
		g.Expect(members).To(HaveKey("kubectl-payments"))
		g.Expect(members).To(HaveKey("kubectl_complete-payments"))
		g.Expect(members["kubectl-payments"].mode&0o111).NotTo(BeZero(), "kubectl-payments is not executable")
		g.Expect(members["kubectl_complete-payments"].mode&0o111).NotTo(BeZero(), "kubectl_complete-payments is not executable")
		g.Expect(string(members["kubectl_complete-payments"].data)).To(ContainSubstring(`exec kubectl-payments __complete "$@"`))
		if _, err := os.Stat(filepath.Join(root, "LICENSE")); err == nil {
			g.Expect(members).To(HaveKey("LICENSE"))
		}

		bin := filepath.Join(t.TempDir(), "kubectl-payments")
		g.Expect(os.WriteFile(bin, members["kubectl-payments"].data, 0o755)).To(Succeed())
		got, err := exec.Command(bin, "version").CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "kubectl-payments version: %s", got)
		g.Expect(strings.TrimSpace(string(got))).To(Equal(version))
	})

	t.Run("the Krew manifest names the archive with its sha256", func(t *testing.T) {
		g := NewWithT(t)
		raw, err := os.ReadFile(filepath.Join(out, "payments.yaml"))
		g.Expect(err).NotTo(HaveOccurred())
		var p krewPlugin
		g.Expect(yaml.UnmarshalStrict(raw, &p)).To(Succeed(), "payments.yaml is not the Krew manifest this test knows:\n%s", raw)
		g.Expect(p.APIVersion).To(Equal("krew.googlecontainertools.github.com/v1alpha2"))
		g.Expect(p.Kind).To(Equal("Plugin"))
		g.Expect(p.Metadata.Name).To(Equal("payments"))
		g.Expect(p.Spec.Version).To(Equal("v" + version))
		g.Expect(p.Spec.Homepage).To(HavePrefix("https://github.com/idempotency-dev/paymentjob-operator"))
		g.Expect(p.Spec.ShortDescription).NotTo(BeEmpty())
		g.Expect(p.Spec.Description).NotTo(BeEmpty())
		g.Expect(p.Spec.Caveats).To(ContainSubstring("--check-provider"))
		g.Expect(p.Spec.Caveats).To(ContainSubstring("Secret"))
		g.Expect(p.Spec.Platforms).To(HaveLen(1))
		pl := p.Spec.Platforms[0]
		g.Expect(pl.Selector.MatchLabels).To(Equal(map[string]string{"os": runtime.GOOS, "arch": runtime.GOARCH}))
		g.Expect(pl.URI).To(Equal("https://github.com/idempotency-dev/paymentjob-operator/releases/download/v" + version + "/" + archive))
		g.Expect(pl.SHA256).To(Equal(archiveSum))
		g.Expect(pl.Bin).To(Equal("kubectl-payments"))
		g.Expect(pl.Files).To(HaveLen(1))
		g.Expect(pl.Files[0].From).To(Equal("*"))
		g.Expect(pl.Files[0].To).To(Equal("."))
	})

	t.Run("checksums.txt agrees", func(t *testing.T) {
		g := NewWithT(t)
		raw, err := os.ReadFile(filepath.Join(out, "checksums.txt"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(raw)).To(Equal(archiveSum + "  " + archive + "\n"))
	})
}

// member is a file of an archive.
type member struct {
	mode int64
	data []byte
}

func untarGz(t *testing.T, path string) map[string]member {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s is not gzipped: %v", path, err)
	}
	tr := tar.NewReader(gz)
	members := map[string]member{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return members
		}
		if err != nil {
			t.Fatalf("%s is not a tar archive: %v", path, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		members[hdr.Name] = member{mode: hdr.Mode, data: data}
	}
}
