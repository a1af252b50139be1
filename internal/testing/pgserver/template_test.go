//go:build postgres

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

package pgserver

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// initdbRan reports whether the server's cluster was made by initdb rather
// than copied from the cache: initdb leaves its log in the server's folder.
func initdbRan(srv *Server) bool {
	_, err := os.Stat(filepath.Join(srv.dir, "initdb.log"))
	return err == nil
}

func TestTheSecondServerCopiesTheCachedCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cached := cachedClusterDir(mustFindBin(t))
	g.Expect(cached).To(HavePrefix(os.Getenv("XDG_CACHE_HOME")))

	first := Start(t)
	g.Expect(initdbRan(first)).To(BeTrue(), "an empty cache: initdb")
	g.Expect(filepath.Join(cached, "PG_VERSION")).To(BeAnExistingFile(), "initdb's cluster is cached")
	second := Start(t)
	g.Expect(initdbRan(second)).To(BeFalse(), "the cached cluster is copied")

	// Two servers, two clusters: what one writes the other does not see,
	// and the cache stays as initdb made it.
	_, err := connect(t, first.CreateDatabase(t, "mine")).Exec(ctx, "CREATE TABLE t (k text)")
	g.Expect(err).NotTo(HaveOccurred())
	var n int
	g.Expect(connect(t, second.DSN("postgres")).QueryRow(ctx,
		"SELECT count(*) FROM pg_database WHERE datname = 'mine'").Scan(&n)).To(Succeed())
	g.Expect(n).To(BeZero(), "a database of the first server on the second")
	g.Expect(filepath.Join(cached, "postmaster.pid")).NotTo(BeAnExistingFile(), "the cache is never run")

	// Its settings are those of every server.
	var user, encoding string
	g.Expect(connect(t, second.DSN("postgres")).QueryRow(ctx,
		"SELECT current_user, pg_encoding_to_char(encoding) FROM pg_database WHERE datname = 'postgres'").
		Scan(&user, &encoding)).To(Succeed())
	g.Expect([]string{user, encoding}).To(Equal([]string{"postgres", "UTF8"}))
}

func TestWithoutAWritableCacheEachServerRunsInitdb(t *testing.T) {
	g := NewWithT(t)
	// The cache folder's parent is a file: nothing can be cached.
	file := filepath.Join(t.TempDir(), "file")
	g.Expect(os.WriteFile(file, nil, 0o600)).To(Succeed())
	t.Setenv("XDG_CACHE_HOME", file)

	for range 2 {
		srv := Start(t)
		g.Expect(initdbRan(srv)).To(BeTrue())
		connect(t, srv.CreateDatabase(t, "works"))
	}
}

func mustFindBin(t *testing.T) string {
	t.Helper()
	bin, err := findBin()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return bin
}

func TestServerFolders(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("PGSERVER_TMPDIR", "")
	if probe, err := os.MkdirTemp("/dev/shm", "probe-"); err == nil {
		g.Expect(os.Remove(probe)).To(Succeed())
		g.Expect(Start(t).dir).To(HavePrefix("/dev/shm/pgserver-"), "a tmpfs when there is one")
	}

	env := reachableDir(t)
	t.Setenv("PGSERVER_TMPDIR", env)
	g.Expect(Start(t).dir).To(HavePrefix(filepath.Join(env, "pgserver-")))

	parent := reachableDir(t)
	srv := StartIn(t, parent)
	g.Expect(srv.dir).To(HavePrefix(filepath.Join(parent, "pgserver-")), "StartIn's parent before $PGSERVER_TMPDIR")
	connect(t, srv.CreateDatabase(t, "on-disk"))
}

// reachableDir is a temporary folder that the user postgres can enter, as
// the parent of a server's folder must be (t.TempDir's is not when the test
// runs as root).
func reachableDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgserver-parent-")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	return dir
}
