# SPDX-License-Identifier: GPL-3.0-or-later
import math

import bpy

from ...limits.export.ik_limits import IkLimits, ik_fidelity
from ...rig.io.bone_errors import SkippedBones, guarded
from ...rig.io.storage import read_cloud, read_limit
from ._common import armature_in_pose_mode, plural, report_done, selected_bones_with_samples

TEXT_NAME = "Joint Limits IK Export"


def export_ik_limits(pose_bone, padding=None):
    """Set the bone's own IK limits (``use_ik_limit_*``, ``ik_min_*``/``ik_max_*``,
    ``lock_ik_*``) to the :class:`~...limits.export.ik_limits.IkLimits` fitted to its samples and
    return ``(limits, fidelity)``. Stiffness is left as it is (it is not a limit). The fidelity
    compares with the bone's fitted limit when it has one."""
    cloud = read_cloud(pose_bone)
    if len(cloud) == 0:
        raise ValueError(f"{pose_bone.name}: no samples")
    pad = pose_bone.joint_limit.padding if padding is None else padding
    limits = IkLimits.fit(cloud, padding=pad)
    fidelity = ik_fidelity(limits, cloud, read_limit(pose_bone))  # read first: a broken limit writes nothing
    mins, maxs = limits.bounds()
    for i, axis in enumerate("xyz"):
        locked = bool(limits.locked[i])
        setattr(pose_bone, f"lock_ik_{axis}", locked)
        setattr(pose_bone, f"use_ik_limit_{axis}", not locked)
        setattr(pose_bone, f"ik_min_{axis}", float(mins[i]))
        setattr(pose_bone, f"ik_max_{axis}", float(maxs[i]))
    return limits, fidelity


def bone_line(name, limits, fidelity):
    """One report line: the bone, its exported ranges in degrees, its fidelity."""
    mins, maxs = limits.bounds()
    ranges = ", ".join(
        f"{axis} locked" if limits.locked[i] else f"{axis} {math.degrees(mins[i]):.1f}..{math.degrees(maxs[i]):.1f}°"
        for i, axis in enumerate("XYZ")
    )
    return f"{name}: {ranges}; {fidelity.summary()}"


class JOINTLIMITS_OT_export_ik_limits(bpy.types.Operator):
    """Set each selected bone's own IK limits (Bone > Inverse Kinematics) to the range of its samples, for rigs that must work without the extension; how faithful they are goes to the text 'Joint Limits IK Export'"""

    bl_idname = "pose.joint_limits_export_ik_limits"
    bl_label = "Export to IK Limits"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return armature_in_pose_mode(cls, context)

    def execute(self, context):
        bones = selected_bones_with_samples(context)
        skipped = SkippedBones()
        done, lines = [], []
        for pb in bones:
            with guarded(skipped, pb.name):
                limits, fidelity = export_ik_limits(pb)
                done.append((pb.name, fidelity))
                lines.append(bone_line(pb.name, limits, fidelity))
                print(f"Joint Limits IK export: {lines[-1]}")
        if not done:
            self.report({"ERROR"}, f"No IK limits set ({skipped.summary()})")
            return {"CANCELLED"}
        text = bpy.data.texts.get(TEXT_NAME) or bpy.data.texts.new(TEXT_NAME)
        text.from_string("\n".join(lines) + "\n")
        report_done(self, f"Set IK limits on {plural(len(done), 'bone')}: {_overall(done)} (see text '{TEXT_NAME}')", skipped)
        return {"FINISHED"}


def _overall(done):
    """The status bar's fidelity: the worst sample share and volume ratio among the bones."""
    name, worst = min(done, key=lambda item: item[1].sample_share)
    text = f"samples accepted {100 * worst.sample_share:.1f}%" + (f" at worst ({name})" if len(done) > 1 else "")
    ratios = [(f.volume_ratio, n) for n, f in done if f.volume_ratio is not None]
    if ratios:
        ratio, name = max(ratios)
        text += f", volume {ratio:.2f}x the learned limit's" + (f" at most ({name})" if len(ratios) > 1 else "")
    return text
