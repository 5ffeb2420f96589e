# The developer entry point. `make demo` and `make test` are the README's two commands; both
# set everything up themselves on a fresh machine (virtualenv, release build, test peers).
.PHONY: demo test setup bench bench-quick lint fmt docs dist

setup:
	bash scripts/bootstrap.sh

demo: setup
	.venv/bin/python scripts/main_job.py $(ARGS)

test:
	bash scripts/test.sh

bench: setup
	.venv/bin/python benches/sidebyside/run.py $(ARGS)

bench-quick: setup
	.venv/bin/python benches/quick.py $(ARGS)

fmt:
	cargo fmt --all
	.venv/bin/ruff format python tests benches scripts

# The documentation site (MkDocs + Material + mkdocstrings) into site/; --strict turns every
# warning (a broken link or anchor, an unresolved reference) into a failure, as in `make test`.
docs: setup
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict

# Every wheel (abi3, manylinux2014 x86_64 + aarch64, musllinux_1_2 x86_64) and the sdist into dist/.
dist: setup
	bash scripts/dist.sh
