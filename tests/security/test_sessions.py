"""The login link of the web UI (the UI asks before it uses one: only its "Sign in" redeems the
token, so a link someone else sent cannot sign a browser in by itself): the link `cohort server`
makes is used once, never printed to a log (only to a terminal, else to a 0600 file), and the
browser session it opens acts for the admin key it was made for: it ends at logout, with that
key's revocation or after its lifetime, it cannot make keys or further links, and `cohort
login-link` makes a new link with any key. Tokens and sessions live in the store
(tests/postgres/test_nginx_deployment.py: valid on every server)."""
import os
import pty
import select
import subprocess
import time

from conftest import COHORT_BIN, ServerProcess
from security_helpers import create_key, http


def token_of(link):
    return link.split("token=", 1)[1]


def redeem(server, token):
    return http(server.url + "/api/v1/sessions", "POST", {"token": token})


def test_login_link_is_used_once_and_never_printed_to_a_pipe(tmp_path):
    server = ServerProcess(tmp_path).start()
    try:
        # stdout is a pipe here: the line names a private file instead of holding the link.
        assert "token=" not in server.ui_line, server.ui_line
        assert "login link in" in server.ui_line
        link_file = server.data_dir / "login-link"
        assert oct(link_file.stat().st_mode & 0o777) == "0o600"
        token = token_of(server.ui_url)
        status, session, _ = redeem(server, token)
        assert status == 201 and session["key"].startswith("cs_"), session
        assert session["expires_ms"] > time.time() * 1000 + 6 * 86400 * 1000
        status, body, _ = redeem(server, token)  # the same link again
        assert status == 401, body
        assert "already used or expired" in body["error"]["message"]
        status, me, _ = http(server.url + "/api/v1/viewer", key=session["key"])
        assert status == 200 and me["entity"] == http(
            server.url + "/api/v1/viewer", key=server.config["api_key"])[1]["entity"]
        server.stop()
        out = server.proc.stdout.read() + server.proc.stderr.read()
        assert token not in out
    finally:
        server.stop()


def test_login_link_is_shown_on_a_terminal(tmp_path):
    master, slave = pty.openpty()
    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME="", XDG_DATA_HOME="")
    proc = subprocess.Popen([str(COHORT_BIN), "server", "--port", "0", "--data-dir",
                             str(tmp_path / "data")], stdout=slave, stderr=subprocess.PIPE,
                            env=env)
    os.close(slave)
    try:
        text = b""
        deadline = time.monotonic() + 20
        while b"Open the web UI" not in text or not text.endswith(b"\n"):
            assert time.monotonic() < deadline, text
            if select.select([master], [], [], 0.5)[0]:
                text += os.read(master, 4096)
        line = text.decode().splitlines()[1]
        assert "?token=" in line and "one-time link, valid 15 minutes" in line, line
        assert not (tmp_path / "data" / "login-link").exists()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        os.close(master)


def test_logout_ends_the_session_on_the_server(server):
    session = redeem(server, token_of(server.ui_url))[1]["key"]
    status, body, _ = http(server.url + "/api/v1/sessions", "DELETE", key=session)
    assert status == 200 and body == {"ended": True}
    status, body, _ = http(server.url + "/api/v1/viewer", key=session)
    assert status == 401 and "session" in body["error"]["message"], body
    status, body, _ = http(server.url + "/api/v1/sessions", "DELETE", key=session)
    assert status == 401


def test_sessions_end_with_the_key_they_came_from_and_cannot_make_keys(server):
    admin = server.config["api_key"]
    url = server.url
    session = redeem(server, token_of(server.ui_url))[1]["key"]
    for method, path, body in (("GET", "/api/v1/keys", None),
                               ("POST", "/api/v1/keys", {"name": "x", "role": "admin"}),
                               ("DELETE", "/api/v1/keys/1", None),
                               ("POST", "/api/v1/login-tokens", {})):
        status, payload, _ = http(url + path, method, body, key=session)
        assert status == 403, (method, path, payload)
    # Another admin revokes the key the session acts for: the session ends with it.
    other = create_key(server, http(url + "/api/v1/viewer", key=admin)[1]["entity"])
    keys = http(url + "/api/v1/keys", key=other)[1]["keys"]
    first = min(k["id"] for k in keys)
    assert http(url + "/api/v1/viewer", key=session)[0] == 200
    unused = http(url + "/api/v1/login-tokens", "POST", {}, key=admin)[1]["token"]
    assert http(url + f"/api/v1/keys/{first}", "DELETE", key=other)[0] == 200
    assert http(url + "/api/v1/viewer", key=admin)[0] == 401
    status, body, _ = http(url + "/api/v1/viewer", key=session)
    assert status == 401, body
    # Nor does a link made for that key before the revocation open a session.
    assert redeem(server, unused)[0] == 401


def test_login_link_command_makes_a_link_for_any_key(server):
    member = create_key(server, "carol", role="member")
    env = dict(server.env, COHORT_BASE_URL=server.url, COHORT_API_KEY=member)
    r = subprocess.run([str(COHORT_BIN), "login-link"], capture_output=True, text=True, env=env,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    link = r.stdout.strip()
    assert link.startswith(server.url + "/?token="), link
    session = redeem(server, token_of(link))[1]["key"]
    status, me, _ = http(server.url + "/api/v1/viewer", key=session)
    assert status == 200 and me["entity"] == "carol"
    # A session (not a key) cannot make another link.
    env["COHORT_API_KEY"] = session
    r = subprocess.run([str(COHORT_BIN), "login-link"], capture_output=True, text=True, env=env,
                       timeout=30)
    assert r.returncode == 1 and "browser session" in r.stderr, r.stderr


def test_server_start_makes_a_fresh_link_for_the_admin_key_and_none_without_one(tmp_path):
    first = ServerProcess(tmp_path).start()
    token1 = token_of(first.ui_url)
    first.stop()
    second = ServerProcess(tmp_path).start()
    try:
        token2 = token_of(second.ui_url)
        assert token2 != token1
        assert redeem(second, token1)[0] == 201  # made by the first start, still unused
        assert redeem(second, token2)[0] == 201
    finally:
        second.stop()
    # --entity of an entity without an admin key: no link.
    third = ServerProcess(tmp_path, ["--entity", "nobody"]).start()
    try:
        assert third.ui_url is None
        assert "no login link" in third.ui_line, third.ui_line
    finally:
        third.stop()
