#!/usr/bin/env python3
"""Runs every example in README.md and docs/*.md, so that none goes stale.

usage: run_examples.py DTRUN PYTHON SOURCE_ROOT [PAGE.md ...]

Each page runs in a scratch folder of its own that links the source tree's folders (configs,
data, scripts, tests, python, ...) and has `dtrun` (DTRUN) first on PATH; its blocks run in page
order, so a block may use what an earlier one wrote (outputs/demo). A fenced block is an
example when its info string is one of:

  sh      run by bash -e (set -o pipefail); every command must succeed
  yaml    a config or a fragment of one: merged over configs/dist_mnist.yaml and `dtrun check`ed
  python  run by PYTHON (the one `compare --plot` uses) with python/ on PYTHONPATH

An HTML comment on the lines just above a block changes how it runs (a reader does not see it):

  <!-- test: short [N] -->   each `dtrun CONFIG ...` run gets
                             --set 'problem_configs.*.optimizer_config.outer_iterations=N' (3)
                             and --set 'problem_configs.*.evaluation.test_samples=1000': the
                             example runs as written, on fewer rounds and evaluated on a subset
                             of the test set (studies of hours, in seconds)
  <!-- test: before CMD -->  runs CMD (a shell line) in the page's folder first
  <!-- test: check -->       for what cannot run here (other hosts, SLURM's queue, root, the
                             network): each dtrun invocation with a config becomes `dtrun check`
                             with its --set and --sweep options, every file the block names must
                             exist, a shell script it names must parse (bash -n), a config it
                             passes to a script must pass `dtrun check`; python: compiles
  <!-- test: file PATH -->   the block is PATH's text, exactly (a file shown in full)
  <!-- test: output CMD -->  (an output block) CMD's output, from the block's first line to as
                             many lines as it has: the same words, and numbers within 1% (and
                             0.002) of those shown, which depend a little on the CPU's BLAS
                             kernels; a last column headed `seconds` is not compared

A block without an info string is output, not an example; one whose lines start with a command
(dtrun, mpirun, srun, sbatch, scripts/...) is an error: it would escape this test. Every relative
link of README.md, configs/README.md and docs/*.md must name a file that exists, and README.md
must link every page of docs/.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

COMMANDS = {"dtrun", "mpirun", "srun", "sbatch", "meson", "ninja", "python3", "bash"}
SHORT = "--set 'problem_configs.*.optimizer_config.outer_iterations={}' --set 'problem_configs.*.evaluation.test_samples=1000'"
RUN_WORDS = {"run"}
TIMEOUT = 600


def is_command(line):
    """Whether a line of a block reads as a command (a program, or a script of the tree run)."""
    words = line.split()
    return bool(words) and not line[0].isspace() and (words[0] in COMMANDS or
                                                      re.match(r"^(scripts|tests)/\S+\.(sh|py)$", words[0]) is not None)


def blocks(path):
    """(line, info, annotations, text) of every fenced block of a page."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i, out = 0, []
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        notes, k = [], i - 1
        while k >= 0 and re.match(r"^<!-- test: .* -->$", lines[k]):
            notes.insert(0, re.match(r"^<!-- test: (.*) -->$", lines[k]).group(1).strip())
            k -= 1
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        out.append((i + 1, m.group(1), notes, "\n".join(lines[i + 1:j])))
        i = j + 1
    return out


def logical_lines(text):
    """The block's commands: continuation lines joined, comments and blank lines dropped."""
    out, cur = [], ""
    for raw in text.split("\n"):
        if raw.rstrip().endswith("\\"):
            cur += raw.rstrip()[:-1] + " "
            continue
        cur += raw
        code = strip_comment(cur).strip()
        if code:
            out.append(code)
        cur = ""
    return out


def strip_comment(line):
    """The line without a trailing `# comment` (a # outside quotes, after a blank or first)."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def dtrun_args(tokens):
    """The arguments after the dtrun word of a command, or None when it runs no dtrun."""
    for i, t in enumerate(tokens):
        if t == "dtrun" or t.endswith("/dtrun"):
            return tokens[i + 1:]
    return None


def runs_config(args):
    """The config a dtrun invocation runs (dtrun [run] X.yaml ...), or None."""
    rest = args[1:] if args and args[0] in RUN_WORDS else args
    return rest[0] if rest and rest[0].endswith(".yaml") else None


def shorten(text, rounds):
    out = []
    for line in logical_lines(text):
        args = dtrun_args(shlex.split(line))
        out.append(f"{line} {SHORT.format(rounds)}" if args is not None and runs_config(args) else line)
    return "\n".join(out)


def check_block(text, dtrun):
    """check mode: the block's dtrun runs checked, its files present, its scripts parsed."""
    errors = []
    for line in logical_lines(text):
        tokens = shlex.split(line)
        args = dtrun_args(tokens)
        cfgs = []
        if args is not None:
            cfg = runs_config(args)
            if cfg is None:
                errors.append(f"{line}: a check block runs configs only")
                continue
            keep = []
            for i, a in enumerate(args):
                if a in ("--set", "-s", "--sweep") and i + 1 < len(args):
                    keep += [a, args[i + 1]]
                elif a.startswith(("--set=", "--sweep=")):
                    keep.append(a)
            cfgs.append([cfg] + keep)
        for t in tokens:
            if re.match(r"^(scripts|tests|configs|python|docs)/", t):
                if not os.path.exists(t):
                    errors.append(f"{line}: {t} does not exist")
                elif t.endswith((".sh", ".sbatch")) and subprocess.run(["bash", "-n", t]).returncode != 0:
                    errors.append(f"{line}: {t} does not parse")
                elif t.endswith(".yaml") and args is None:
                    cfgs.append([t])
        for c in cfgs:
            r = subprocess.run([dtrun, "check", *c], capture_output=True, text=True, timeout=TIMEOUT)
            if r.returncode != 0:
                errors.append(f"{line}: dtrun check {' '.join(c)}: exit {r.returncode}: {r.stderr.strip()[:400]}")
    return errors


def compare_output(shown, got):
    """Errors where the output got differs from the block shown: from the line where the block's
    first line begins, as many lines; words equal, numbers within 1% (and 0.002); a last column
    headed `seconds` (wall time) not compared."""
    want = shown.rstrip("\n").split("\n")
    lines = got.split("\n")
    start = next((i for i, l in enumerate(lines) if l.split()[:2] == want[0].split()[:2]), None)
    if start is None:
        return [f"the output has no line like {want[0]!r}:\n{got[-800:]}"]
    lines = lines[start:start + len(want)]
    skip_last = want[0].split()[-1] == "seconds"
    errors = []
    for w, g in zip(want, lines + [""] * (len(want) - len(lines))):
        wt, gt = w.split(), g.split()
        if skip_last and len(wt) > 1 and w is not want[0]:
            wt, gt = wt[:-1], gt[:-1]
        if len(wt) != len(gt):
            errors.append(f"shown {w!r}, printed {g!r}")
            continue
        for a, b in zip(wt, gt):
            try:
                x, y = float(a), float(b)
            except ValueError:
                if a != b:
                    errors.append(f"shown {w!r}, printed {g!r}")
                    break
                continue
            if abs(x - y) > 0.01 * max(abs(x), abs(y)) + 0.002:
                errors.append(f"shown {w!r}, printed {g!r} ({a} vs {b})")
                break
    return errors


def merge(base, over):
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            merge(base[k], v)
        else:
            base[k] = v
    return base


def run_page(page, dtrun, python, root, scratch):
    os.makedirs(scratch)
    for name in os.listdir(root):
        if name in (".git", "outputs") or name.startswith("build"):
            continue
        if name == "data":  # a folder of its own: an example may add a dataset (data/cifar10)
            os.makedirs(os.path.join(scratch, name))
            for d in os.listdir(os.path.join(root, name)):
                os.symlink(os.path.join(root, name, d), os.path.join(scratch, name, d))
            continue
        os.symlink(os.path.join(root, name), os.path.join(scratch, name))
    bindir = os.path.join(scratch, ".bin")
    os.makedirs(bindir)
    os.symlink(dtrun, os.path.join(bindir, "dtrun"))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"],
               PYTHONPATH=os.path.join(root, "python"), MPLBACKEND="Agg")
    rel = os.path.relpath(page, root)
    ok = bad = 0
    for line, info, notes, text in blocks(page):
        where = f"{rel}:{line}"
        modes = {n.split()[0] for n in notes}
        unknown = modes - {"short", "before", "check", "file", "output"}
        errors = [f"unknown annotation {sorted(unknown)}"] if unknown else []
        if not info:
            if any(is_command(l) for l in text.split("\n")):
                errors.append("commands in a block without an info string (```sh runs them)")
            elif "output" in modes:
                os.chdir(scratch)
                t0 = time.time()
                cmd = [n for n in notes if n.startswith("output ")][0][len("output "):]
                r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", cmd], env=env, capture_output=True, text=True,
                                   timeout=TIMEOUT)
                errors += [f"exit {r.returncode}: {r.stderr[-800:]}"] if r.returncode != 0 else compare_output(text, r.stdout)
                if not errors:
                    ok += 1
                    print(f"ok   {where} (output) {time.time() - t0:.1f} s")
                    continue
            else:
                continue
        elif info not in ("sh", "yaml", "python"):
            continue
        os.chdir(scratch)
        t0 = time.time()
        for n in notes:
            if n.startswith("before "):
                r = subprocess.run(["bash", "-e", "-c", n[len("before "):]], env=env, capture_output=True, text=True,
                                   timeout=TIMEOUT)
                if r.returncode != 0:
                    errors.append(f"before: exit {r.returncode}: {(r.stdout + r.stderr)[-800:]}")
        file_note = [n for n in notes if n.startswith("file ")]
        if errors:
            pass
        elif file_note:
            want = open(os.path.join(root, file_note[0].split(None, 1)[1]), encoding="utf-8").read().rstrip("\n")
            if text.rstrip("\n") != want:
                errors.append(f"the block is not {file_note[0].split(None, 1)[1]} as it is now")
        elif info == "sh" and "check" in modes:
            errors += check_block(text, dtrun)
        elif info == "sh":
            short = [n.split() for n in notes if n.split()[0] == "short"]
            script = shorten(text, short[0][1] if len(short[0]) > 1 else 3) if short else text
            r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], env=env, capture_output=True, text=True,
                               timeout=TIMEOUT)
            if r.returncode != 0:
                errors.append(f"exit {r.returncode}:\n{(r.stdout + r.stderr)[-1500:]}")
        elif info == "yaml":
            try:
                frag = yaml.safe_load(text)
            except yaml.YAMLError as e:
                frag = None
                errors.append(f"not YAML: {e}")
            if frag is not None and not isinstance(frag, dict):
                errors.append("a YAML example is a mapping from the top (experiment: ...)")
            elif frag is not None:
                cfg = merge(yaml.safe_load(open(os.path.join(root, "configs/dist_mnist.yaml"))), frag)
                path = os.path.join(scratch, "doc_example.yaml")
                with open(path, "w") as f:
                    yaml.safe_dump(cfg, f, sort_keys=False)
                r = subprocess.run([dtrun, "check", path], env=env, capture_output=True, text=True, timeout=TIMEOUT)
                if r.returncode != 0:
                    errors.append(f"dtrun check of the demo with this block over it: exit {r.returncode}: {r.stderr[-800:]}")
        elif info == "python":
            if "check" in modes:
                try:
                    compile(text, where, "exec")
                except SyntaxError as e:
                    errors.append(f"does not compile: {e}")
            else:
                r = subprocess.run([python, "-c", text], env=env, capture_output=True, text=True, timeout=TIMEOUT)
                if r.returncode != 0:
                    errors.append(f"exit {r.returncode}:\n{(r.stdout + r.stderr)[-1500:]}")
        if errors:
            bad += 1
            print(f"FAIL {where} ({info or 'no info string'}): " + "\n  ".join(errors))
        else:
            ok += 1
            print(f"ok   {where} ({info}{', ' + ', '.join(sorted(modes)) if modes else ''}) {time.time() - t0:.1f} s")
        sys.stdout.flush()
    return ok, bad


def check_links(root, pages):
    """Every relative link and image of the pages names a file that exists, and README.md links
    every page of docs/ (so each is reachable from it). The problems found, as lines."""
    problems = []
    for page in pages:
        text = open(os.path.join(root, page), encoding="utf-8").read()
        here = os.path.dirname(os.path.join(root, page))
        targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text) + re.findall(r'<img src="([^"]+)"', text)
        for t in targets:
            if not re.match(r"^[a-z]+:", t) and not os.path.exists(os.path.normpath(os.path.join(here, t))):
                problems.append(f"{page}: a link to {t}, which does not exist")
    readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    for p in sorted(os.listdir(os.path.join(root, "docs"))):
        if p.endswith(".md") and f"(docs/{p}" not in readme:
            problems.append(f"README.md does not link docs/{p}")
    return problems


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    dtrun, python, root = os.path.realpath(sys.argv[1]), sys.argv[2], os.path.realpath(sys.argv[3])
    if not os.path.exists(os.path.join(root, "data/mnist/train-images-idx3-ubyte")):
        print("no data/mnist: run scripts/setup.sh")
        sys.exit(77)
    pages = sys.argv[4:] or ["README.md"] + sorted(os.path.join("docs", p) for p in os.listdir(os.path.join(root, "docs"))
                                                 if p.endswith(".md"))
    tmp = tempfile.mkdtemp(prefix="dtrun_docs_")
    total_ok = total_bad = 0
    for problem in check_links(root, ["README.md", "configs/README.md"] + [os.path.join("docs", p) for p in
                                      sorted(os.listdir(os.path.join(root, "docs"))) if p.endswith(".md")]):
        print(f"FAIL {problem}")
        total_bad += 1
    try:
        for page in pages:
            ok, bad = run_page(os.path.join(root, page), dtrun, python, root,
                               os.path.join(tmp, page.replace("/", "_")))
            total_ok, total_bad = total_ok + ok, total_bad + bad
    finally:
        os.chdir(root)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"docs: {total_ok} examples ok, {total_bad} failed, in {len(pages)} pages")
    sys.exit(1 if total_bad else 0)


if __name__ == "__main__":
    main()
