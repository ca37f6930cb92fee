"""The demo collects static files once per change of the sources, not on every start."""

import os

from config.demo import statics


def test_static_files_are_collected_again_only_after_a_source_changes(settings, tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "app.css").write_text("body { color: black }")
    settings.STATICFILES_DIRS = [source]
    settings.STATIC_ROOT = tmp_path / "collected"
    # The manifest storage writes the staticfiles.json that the stamp is checked beside.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.ManifestStaticFilesStorage"},
    }
    said = []

    assert statics.collect_if_changed(said.append) is True
    assert (tmp_path / "collected" / "app.css").read_text() == "body { color: black }"
    assert statics.collect_if_changed(said.append) is False
    assert "unchanged" in said[-1]

    (source / "app.css").write_text("body { color: navy }")
    stat = (source / "app.css").stat()
    os.utime(source / "app.css", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert statics.collect_if_changed(said.append) is True
    assert (tmp_path / "collected" / "app.css").read_text() == "body { color: navy }"

    # Collected files removed by hand (no manifest): collected again despite the stamp.
    (tmp_path / "collected" / "staticfiles.json").unlink()
    assert statics.collect_if_changed(said.append) is True


def test_the_fingerprint_covers_installed_packages_static_files(settings):
    names = [name for name, _path in statics.sources()]
    assert any(name.startswith("admin/") for name in names)
    assert any(name.startswith("drf_spectacular_sidecar/") for name in names)
