"""What the server shows without a key: /metrics names no entity unless an admin key asks, and
the web UI's pages cannot be framed, do not leak their address in a Referer and run only their
own scripts."""
from conftest import ServerProcess
from security_helpers import create_key, http


def test_metrics_name_entities_only_for_an_admin_key(server):
    admin = server.config["api_key"]
    entity = http(server.url + "/api/v1/viewer", key=admin)[1]["entity"]
    member = create_key(server, "othercorp", role="member")
    for key in (admin, member):
        http(server.url + "/api/v1/projects", key=key)  # activity of both entities
    for key in (None, member):
        status, text, _ = http(server.url + "/metrics", key=key)
        assert status == 200
        assert "cohort_http_requests_total" in text
        assert "entity=" not in text and "othercorp" not in text and entity not in text, key
    status, text, _ = http(server.url + "/metrics", key=admin)
    assert status == 200
    assert f'cohort_entity_requests_total{{entity="{entity}"' in text
    assert 'entity="othercorp"' in text
    assert http(server.url + "/metrics", key="ck_" + "1" * 40)[0] == 401


def page_headers(url):
    status, _, headers = http(url)
    assert status == 200, url
    return {k.lower(): v for k, v in headers.items()}


def check_page_headers(h):
    csp = h["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp, csp
    assert "default-src 'self'" in csp and "unsafe" not in csp, csp
    assert h["x-frame-options"] == "DENY"
    assert h["referrer-policy"] == "no-referrer"
    assert h["x-content-type-options"] == "nosniff"


def test_ui_pages_and_assets_carry_the_security_headers(tmp_path):
    ui = tmp_path / "ui"
    (ui / "assets").mkdir(parents=True)
    (ui / "index.html").write_text("<!doctype html><title>x</title><script src=/assets/a.js>"
                                   "</script>")
    (ui / "assets" / "a.js").write_text("1")
    server = ServerProcess(tmp_path / "s", ["--ui-dir", str(ui)]).start()
    try:
        for path in ("/", "/?token=abc", "/runs/some/where", "/assets/a.js"):
            check_page_headers(page_headers(server.url + path))
    finally:
        server.stop()
    # Without a built UI, the placeholder page too.
    bare = ServerProcess(tmp_path / "b", ["--ui-dir", str(tmp_path / "none")]).start()
    try:
        check_page_headers(page_headers(bare.url + "/"))
    finally:
        bare.stop()
