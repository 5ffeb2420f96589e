"""Java programs of the interop tests, compiled and run against the Apache fixture's classpath.

The interop tests check our client against the official Java client: a small Java program
(``tests/*/java/*.java``) is compiled once per session against the jars of the Apache
Pulsar fixture (``resolve_classpath``) and run on its classpath. This module is the one
place that finds ``javac``, compiles, and builds the ``java`` command line. Set-up failing
(no JDK, javac errors) fails the test with the reason, never a skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.peers.apache import JAVA, resolve_classpath

__all__ = ["CLIENT_API", "JAVA_ENV", "JVM_FLAGS", "compile_program", "javac", "run_tool"]

#: The environment of the Java programs: without the fixture's ``PULSAR_*`` settings, which
#: the Java client would read as its own configuration.
JAVA_ENV = {k: v for k, v in os.environ.items() if not k.startswith("PULSAR_")}
#: A client JVM starts fast (C1 only, class-data sharing); its heap is ``compile_program``'s.
JVM_FLAGS = ["-XX:TieredStopAtLevel=1", "-Xshare:auto"]

#: The jars a program that uses only the client API compiles against.
CLIENT_API = ("pulsar-client-api-",)


def javac() -> str:
    """javac of the JDK whose ``java`` runs the fixture (``STREAMWIRE_JAVA``), else PATH's."""
    java = shutil.which(JAVA)
    beside = Path(java).resolve().parent / "javac" if java else None
    found = str(beside) if beside and beside.is_file() else shutil.which("javac")
    if found is None:
        pytest.fail("javac not found: install a JDK 17 (apt-get install openjdk-17-jdk-headless)")
    return found


def run_tool(cmd: list[str], what: str) -> None:
    """Run a set-up tool (javac, protoc); its failure fails the test with its stderr."""
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=JAVA_ENV)
    if out.returncode != 0:
        pytest.fail(f"{what} failed (rc={out.returncode}):\n{out.stderr[-4000:]}", pytrace=False)


def compile_program(
    classes: Path,
    sources: Sequence[Path | str],
    main: str,
    *,
    jars: tuple[str, ...] = CLIENT_API,
    heap: str = "512m",
) -> list[str]:
    """Compile ``sources`` into ``classes``; the command that runs ``main`` (append its
    arguments).

    Args:
        classes: an empty directory for the class files.
        sources: the ``.java`` files.
        main: the class to run.
        jars: the name prefixes of the classpath jars the sources use: javac reads only
            those (the whole broker classpath is ~300 jars); the program runs on all of it.
        heap: the JVM's largest heap (``-Xmx``). Default 512m.
    """
    _, cp = resolve_classpath()
    wanted = [j for j in cp.split(os.pathsep) if os.path.basename(j).startswith(jars)]
    run_tool(
        [javac(), "-nowarn", "-d", str(classes), "-cp", os.pathsep.join(wanted)]
        + [str(s) for s in sources],
        "javac",
    )
    return [JAVA, *JVM_FLAGS, f"-Xmx{heap}", "-cp", f"{classes}{os.pathsep}{cp}", main]
