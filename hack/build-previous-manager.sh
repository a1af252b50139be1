#!/usr/bin/env bash
# Builds the manager of the previous version, the commit named in
# hack/upgrade-from, into bin/manager-previous (or the path given as the
# first argument), for the upgrade and rollback scenarios of make test-e2e.
# The commit's tree is exported with git archive into a temporary folder and
# built there as make build builds bin/manager (go build -o ... ./cmd).
# The build is skipped when the binary exists and its stamp file
# (<binary>.commit) names the same commit. The commit must be in this clone:
# a shallow clone fails with a message, it is never skipped.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
from_file="${root}/hack/upgrade-from"
out="${1:-${root}/bin/manager-previous}"
case "${out}" in
/*) ;;
*) out="$(pwd)/${out}" ;;
esac
stamp="${out}.commit"

fail() {
	echo "build-previous-manager: $*" >&2
	exit 1
}

[ -f "${from_file}" ] || fail "${from_file} is missing: it names the commit of the previous version"
commit="$({ grep -v '^[[:space:]]*#' "${from_file}" || true; } | tr -d '[:space:]')"
[[ "${commit}" =~ ^[0-9a-f]{40}$ ]] ||
	fail "${from_file} must hold one full 40-hex commit besides its # comments, found '${commit}'"

if [ -x "${out}" ] && [ "$(cat "${stamp}" 2>/dev/null)" = "${commit}" ]; then
	echo "build-previous-manager: ${out} is the manager of ${commit}, up to date"
	exit 0
fi

git -C "${root}" rev-parse --git-dir >/dev/null 2>&1 ||
	fail "${root} is not a Git clone: the previous version ${commit} (hack/upgrade-from) cannot be built from it"
if ! git -C "${root}" cat-file -e "${commit}^{commit}" 2>/dev/null; then
	shallow=""
	if [ "$(git -C "${root}" rev-parse --is-shallow-repository)" = "true" ]; then
		shallow=" This is a shallow clone: run 'git fetch --unshallow', or clone with full history."
	fi
	fail "commit ${commit} (hack/upgrade-from) is not in this clone, so the previous manager cannot be built.${shallow}"
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/manager-previous.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
echo "build-previous-manager: building the manager of ${commit} into ${out}"
git -C "${root}" archive --format=tar "${commit}" | tar -x -C "${tmp}"
mkdir -p "$(dirname "${out}")"
rm -f "${stamp}"
(cd "${tmp}" && go build -o "${out}" ./cmd)
echo "${commit}" >"${stamp}"
