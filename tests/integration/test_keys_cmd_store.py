"""`cohort keys` acts on the store its flags name, even when COHORT_STORE or COHORT_DATA_DIR name
another: the flag wins (each subcommand reads the environment into options of its own)."""
import os
import sqlite3
import subprocess

import pytest

from conftest import COHORT_BIN, ServerProcess


def key_names(data_dir):
    with sqlite3.connect(data_dir / "cohort.db") as db:
        return {row[0] for row in db.execute("SELECT name FROM api_keys")}


@pytest.mark.parametrize("env_var,flag", [("COHORT_STORE", "--store"),
                                          ("COHORT_DATA_DIR", "--data-dir")])
def test_keys_flag_wins_over_the_environment(tmp_path, env_var, flag):
    a = ServerProcess(tmp_path / "a").start()
    b = ServerProcess(tmp_path / "b").start()
    try:
        def value(server):
            if flag == "--store":
                return "sqlite://" + str(server.data_dir / "cohort.db")
            return str(server.data_dir)
        env = {k: v for k, v in os.environ.items() if not k.startswith("COHORT_")}
        env.update(HOME=str(tmp_path), **{env_var: value(a)})

        def keys(*args):
            return subprocess.run([str(COHORT_BIN), "keys", *args], capture_output=True,
                                  text=True, env=env, timeout=60)
        r = keys("create", "--entity", "e", "--name", "made-in-b", flag, value(b))
        assert r.returncode == 0, r.stderr
        assert "made-in-b" in key_names(b.data_dir)
        assert "made-in-b" not in key_names(a.data_dir)
        r = keys("list", "--entity", "e", flag, value(b))
        assert r.returncode == 0 and "made-in-b" in r.stdout, r.stdout + r.stderr
        # Without the flag the environment's store is the one.
        r = keys("list", "--entity", "e")
        assert r.returncode == 0 and "made-in-b" not in r.stdout, r.stdout + r.stderr
    finally:
        a.stop()
        b.stop()
