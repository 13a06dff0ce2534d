# SPDX-License-Identifier: GPL-3.0-or-later
"""The checkout is a valid extension: Blender's validator passes, Blender's builder makes a zip
that installs and enables as ``bl_ext.user_default.joint_limits``, and unregister leaves nothing
behind. Each runs in its own Blender process (a second copy of the add-on would clash)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_blender(script, tmp_path):
    env = dict(os.environ, BLENDER_USER_RESOURCES=tempfile.mkdtemp(dir=tmp_path))
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT ") :])


def test_validate_build_and_install_the_zip(tmp_path):
    out = tmp_path / "dist"
    # the checkout as it is after an earlier build in it: the old zip must not go into the new one
    src = tmp_path / "joint_limits"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv*", "out", "*cache*", ".hypothesis"))
    (src / "joint_limits-0.1.0.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    result = run_blender(
        f"""
        import json, sys, zipfile, bpy
        from bl_pkg import bl_extension_cli
        src, out = {str(src)!r}, {str(out)!r}
        import os
        os.makedirs(out, exist_ok=True)
        validated = bl_extension_cli.cli_extension_handler(["validate", src])
        built = bl_extension_cli.cli_extension_handler(["build", "--source-dir", src, "--output-dir", out])
        import glob
        zips = glob.glob(out + "/*.zip")
        names = zipfile.ZipFile(zips[0]).namelist()
        bpy.ops.extensions.package_install_files(filepath=zips[0], repo="user_default", enable_on_install=True)
        mod = "bl_ext.user_default.joint_limits"
        enabled = mod in bpy.context.preferences.addons
        has_op = hasattr(bpy.ops.pose, "joint_limits_fit") and bpy.ops.pose.joint_limits_fit.poll() is False
        has_prop = hasattr(bpy.types.PoseBone, "joint_limit")
        print("RESULT " + json.dumps(dict(validated=validated, built=built, zips=zips, names=names,
              enabled=enabled, has_op=has_op, has_prop=has_prop)))
        """,
        tmp_path,
    )
    assert result["validated"] == 0
    assert result["built"] == 0
    assert len(result["zips"]) == 1
    names = result["names"]
    assert "blender_manifest.toml" in names and "limits/geometry/quaternion.py" in names and "LICENSE" in names
    assert "limits/body/preset_data/human_rom.json" in names, "the human preset ships in the zip"
    assert not any(n.endswith(".zip") for n in names)
    assert not any(
        n.startswith(("tests/", "bench/", "tools/", ".ci/", ".hypothesis/", ".venv", "requirements")) or "__pycache__" in n
        for n in names
    )
    assert result["enabled"] and result["has_op"] and result["has_prop"]


def test_unregister_removes_every_handler_class_and_property(tmp_path):
    result = run_blender(
        f"""
        import json, sys
        sys.path.insert(0, {str(ROOT / "tools")!r})
        import bpy, addon_utils, blender_session
        mod = blender_session.load_extension()
        def ours():
            return sorted(f"{{name}}:{{h.__name__}}" for name in dir(bpy.app.handlers) if not name.startswith("_")
                          for h in (getattr(bpy.app.handlers, name) if isinstance(getattr(bpy.app.handlers, name), list) else [])
                          if "joint_limits" in getattr(h, "__module__", ""))
        before = ours()
        timer = mod.live.work_ahead  # (registered while a look-ahead has frames pending)
        bpy.app.timers.register(timer, first_interval=60.0)
        addon_utils.disable(blender_session.MODULE, default_set=True)
        after = ours() + (["timer:work_ahead"] if bpy.app.timers.is_registered(timer) else [])
        leftovers = [c for c in ("JOINTLIMITS_OT_fit", "JOINTLIMITS_PT_limit", "JointLimitSettings") if hasattr(bpy.types, c)]
        print("RESULT " + json.dumps(dict(before=before, after=after, leftovers=leftovers,
              prop=hasattr(bpy.types.PoseBone, "joint_limit") or hasattr(bpy.types.Bone, "joint_limit"),
              scene=hasattr(bpy.types.Scene, "joint_limits"), store=hasattr(bpy.types.Armature, "joint_limits_data"))))
        """,
        tmp_path,
    )
    assert len(result["before"]) >= 5, result["before"]
    assert result["after"] == []
    assert result["leftovers"] == []
    assert not result["prop"] and not result["scene"] and not result["store"]


def test_every_operator_documents_itself_and_its_parameters(addon):
    """``help(bpy.ops.pose.joint_limits_<verb>)`` and tooltips: a description for the operator
    and for every parameter."""
    import bpy

    missing = []
    for cls in addon.ui.operators.classes:
        module, name = cls.bl_idname.split(".")
        rna = getattr(getattr(bpy.ops, module), name).get_rna_type()
        missing += [cls.bl_idname] if not rna.description.strip() else []
        missing += [
            f"{cls.bl_idname}.{p.identifier}" for p in rna.properties if p.identifier != "rna_type" and not p.description.strip()
        ]
    assert not missing
