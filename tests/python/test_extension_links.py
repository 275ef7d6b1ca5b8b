"""The client links only the client (docs/architecture.md): the Python extension holds the
client library, the agent protocol and the core, never the agent daemon (WAL writer, Sender,
system monitor, sync) nor libcurl; a training process without a shared agent starts a private
agent process instead (`cohort agent --private`)."""
import subprocess

import sdk_helpers


def extension():
    found = sorted((sdk_helpers.BUILD / "python" / "cohort").glob("_cohort*.so"))
    assert found, f"no extension under {sdk_helpers.BUILD}/python/cohort"
    return found[0]


def test_the_extension_does_not_link_libcurl():
    out = subprocess.run(["ldd", str(extension())], capture_output=True, text=True, check=True)
    assert "libcurl" not in out.stdout, out.stdout


def test_the_extension_holds_no_agent_daemon_code():
    out = subprocess.run(["nm", "-C", str(extension())], capture_output=True, text=True,
                         check=True).stdout
    assert "cohort::client::LogBuffer" in out  # the check can see symbols at all
    for daemon in ("cohort::agent::Sender::", "cohort::agent::Ingest::",
                   "cohort::agent::WriterStream::", "cohort::wal::Log::", "curl_easy_perform",
                   "cohort::monitor::Sampler::"):
        assert daemon not in out, daemon
