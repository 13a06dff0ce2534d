# SPDX-License-Identifier: GPL-3.0-or-later
import bpy

from ...limits.body.skeleton import mirror_local_rotation, mirror_name
from ...rig.io.storage import read_cloud_clips, write_cloud
from ...rig.tasks.fit import fit_pose_bone
from ...rig.tasks.symmetry import body_mirror
from ._common import armature_in_pose_mode, plural, selected_bones

COPIED = (
    "enabled",
    "model",
    "mode",
    "influence",
    "padding",
    "calibrate_padding",
    "target_recall",
    "use_softening",
    "soft_radius",
    "soft_falloff",
    "reference",
    "reference_frame",
    "twist_axis",
    "use_symmetry",
)


class JOINTLIMITS_OT_mirror(bpy.types.Operator):
    """Copy the selected bones' samples and limit settings to their .L/.R counterparts, mirrored"""

    bl_idname = "pose.joint_limits_mirror"
    bl_label = "Mirror Limits"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return armature_in_pose_mode(cls, context)

    def execute(self, context):
        obj = context.object
        done, missing = 0, []
        mirror = body_mirror(obj)
        for pb in selected_bones(context):
            if not pb.joint_limit.cloud_count:
                continue
            other_name = mirror_name(pb.name)
            other = obj.pose.bones.get(other_name) if other_name else None
            if other is None:
                missing.append(pb.name)
                continue
            src, dst = pb.joint_limit, other.joint_limit
            dst.limit_data = ""
            for name in COPIED:
                setattr(dst, name, getattr(src, name))
            q, runs = read_cloud_clips(pb)
            if mirror is not None and mirror.partners.get(pb.name) == other.name:  # the rig says how they mirror
                q = mirror.mirrored(q, other.name, pb.name)
            else:
                q = mirror_local_rotation(q)
            write_cloud(other, q, clip=runs)
            if src.has_limit:
                try:
                    fit_pose_bone(obj, other, mirror)
                except ValueError as err:
                    self.report({"WARNING"}, f"{other.name}: {err}")
            done += 1
        if not done:
            why = f"no mirror bone for {', '.join(missing)}" if missing else "no selected bone has samples"
            self.report({"ERROR"}, f"Nothing mirrored: {why}")
            return {"CANCELLED"}
        self.report({"INFO"}, f"Mirrored {plural(done, 'bone')}" + (f"; no counterpart for {len(missing)}" if missing else ""))
        return {"FINISHED"}
