"""A throwaway PostgreSQL cluster for cross-process tests and benchmarks.

The Python twin of src/store/postgres/pg_test_cluster.h: initdb into a fresh temporary directory,
a server listening only on a Unix socket inside it (no TCP port to clash with anything), and on
stop `pg_ctl stop -m fast` and the directory removed. As root (this machine, CI) the server
programs run as the `postgres` user through runuser, since PostgreSQL refuses to run as root.
The programs are found in $COHORT_PG_BIN, else the newest /usr/lib/postgresql/<v>/bin.

As a library:
    with PgCluster() as pg:
        pg.create_database("cohort")
        url = pg.url("cohort")            # postgresql://postgres@/cohort?host=...&port=...

From a shell (bench/pg_bench.sh):
    python3 tests/postgres/pg_cluster.py start DIR [--durable] [--set name=value ...]
        -> prints the URL of database "cohort"; the cluster lives in DIR (created; must not
           exist, and its parent must be searchable by the postgres user, e.g. under /tmp)
    python3 tests/postgres/pg_cluster.py stop DIR
"""
import argparse
import glob
import os
import pwd
import random
import shutil
import subprocess
import sys
import tempfile


def find_bin_dir():
    env = os.environ.get("COHORT_PG_BIN")
    if env:
        return env
    best = None
    for path in glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"):
        version = path.split("/")[4]
        if version.isdigit() and (best is None or int(version) > int(best[0])):
            best = (version, os.path.dirname(path))
    if best is None:
        raise RuntimeError("no PostgreSQL server programs (set COHORT_PG_BIN or install postgresql)")
    return best[1]


class PgCluster:
    """One throwaway cluster. Not thread-safe; its URLs may be used from anywhere."""

    def __init__(self, directory=None, durable=False, max_connections=300, settings=None):
        self.bin_dir = find_bin_dir()
        self.dir = directory
        self.durable = durable
        self.max_connections = max_connections
        self.settings = dict(settings or {})
        self.port = None
        self.started = False

    def _run(self, program, *args, check=True):
        argv = [os.path.join(self.bin_dir, program), *args]
        if os.geteuid() == 0:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        with open(os.path.join(self.dir, "programs.log"), "ab") as log:
            proc = subprocess.run(argv, cwd="/", stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=subprocess.STDOUT)
        if check and proc.returncode != 0:
            raise RuntimeError(f"{program} failed ({proc.returncode}): {self.log_tail()}")
        return proc.returncode

    def log_tail(self):
        out = ""
        for name in ("programs.log", "server.log"):
            try:
                with open(os.path.join(self.dir, name), errors="replace") as f:
                    out += f.read()[-1500:]
            except OSError:
                pass
        return out

    def start(self):
        if self.dir is None:
            self.dir = tempfile.mkdtemp(prefix="cohort-pg-")
        else:
            os.makedirs(self.dir)
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.port = random.randint(20000, 59999)
        data = os.path.join(self.dir, "data")
        self._run("initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8",
                  "--locale=C", "--no-sync")
        opts = [f"-k {self.dir}", f"-p {self.port}", "-c listen_addresses=''",
                f"-c max_connections={self.max_connections}"]
        if not self.durable:
            opts += ["-c fsync=off", "-c full_page_writes=off"]
        opts += [f"-c {k}={v}" for k, v in self.settings.items()]
        self._run("pg_ctl", "-D", data, "-w", "-t", "60", "-l", os.path.join(self.dir, "server.log"),
                  "-o", " ".join(opts), "start")
        self.started = True
        with open(os.path.join(self.dir, "port"), "w") as f:
            f.write(str(self.port))
        return self

    def stop(self):
        if self.dir is None:
            return
        if self.started or os.path.exists(os.path.join(self.dir, "data", "postmaster.pid")):
            self._run("pg_ctl", "-D", os.path.join(self.dir, "data"), "-w", "-t", "60", "-m",
                      "fast", "stop", check=False)
            self.started = False
        shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, db, extra=""):
        url = f"postgresql://postgres@/{db}?host={self.dir}&port={self.port}"
        return url + ("&" + extra if extra else "")

    def psql(self, db, sql):
        """Runs SQL as the superuser; returns the unaligned, tuples-only output."""
        psql = os.path.join(self.bin_dir, "psql")
        out = subprocess.run([psql, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", self.dir,
                              "-p", str(self.port), "-U", "postgres", "-d", db, "-c", sql],
                             check=True, capture_output=True, text=True)
        return out.stdout.strip()

    def create_database(self, name):
        self.psql("postgres", f'CREATE DATABASE "{name}"')

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start")
    start.add_argument("dir")
    start.add_argument("--durable", action="store_true", help="fsync on (benchmarks)")
    start.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                       help="a server setting, e.g. shared_buffers=1GB")
    stop = sub.add_parser("stop")
    stop.add_argument("dir")
    args = parser.parse_args()
    if args.command == "start":
        settings = dict(s.split("=", 1) for s in args.set)
        cluster = PgCluster(args.dir, durable=args.durable, settings=settings)
        try:
            cluster.start()
            cluster.create_database("cohort")
        except Exception:
            cluster.stop()
            raise
        print(cluster.url("cohort"))
    else:
        cluster = PgCluster(args.dir)
        cluster.started = True
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
