# SPDX-License-Identifier: GPL-3.0-or-later
import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, StringProperty

from ...rig.tasks.sample import dropped_message, sample_rotations, store_clouds
from ._common import armature_in_pose_mode, plural, selected_bones


class JOINTLIMITS_OT_sample(bpy.types.Operator):
    """Sample the selected bones' rotations from actions into rotation clouds"""

    bl_idname = "pose.joint_limits_sample"
    bl_label = "Sample Rotations"
    bl_options = {"REGISTER", "UNDO"}

    source: EnumProperty(
        name="Actions",
        description="Which actions to sample",
        items=(
            ("ACTIVE", "Active Action", "The armature's current action"),
            ("ALL", "All Actions", "Every action with keys for these bones"),
            ("NAMED", "Named", "The actions listed by name"),
        ),
        default="ACTIVE",
    )
    action_names: StringProperty(name="Names", description="Comma-separated action names (for Named)")
    use_frame_range: BoolProperty(name="Frame Range", description="Only sample a frame range", default=False)
    frame_start: IntProperty(name="Start", description="First frame of the range (with Frame Range)", default=1)
    frame_end: IntProperty(name="End", description="Last frame of the range (with Frame Range)", default=250)
    evaluated: BoolProperty(
        name="With Constraints",
        description="Evaluate every frame with constraints and IK (slower) instead of reading keys",
        default=False,
    )
    append: BoolProperty(name="Append", description="Add to the existing samples instead of replacing them", default=False)
    min_spacing: FloatProperty(
        name="Min Spacing",
        description="Thin the samples so no two are closer than this (0: keep all)",
        default=0.0,
        min=0.0,
        max=1.0,
        subtype="ANGLE",
    )
    densify: FloatProperty(
        name="Densify",
        description="Insert slerp samples so consecutive samples are at most this far apart (0: off)",
        default=0.0,
        min=0.0,
        max=1.0,
        subtype="ANGLE",
    )

    @classmethod
    def poll(cls, context):
        return armature_in_pose_mode(cls, context)

    def actions(self, context):
        obj = context.object
        if self.source == "ACTIVE":
            anim = obj.animation_data
            return [anim.action] if anim and anim.action else []
        if self.source == "ALL":
            return list(bpy.data.actions)
        names = [n.strip() for n in self.action_names.split(",") if n.strip()]
        missing = [n for n in names if n not in bpy.data.actions]
        if missing:
            raise ValueError(f"no action named {', '.join(missing)}")
        return [bpy.data.actions[n] for n in names]

    def execute(self, context):
        obj = context.object
        names = [pb.name for pb in selected_bones(context)]
        start, end = (self.frame_start, self.frame_end) if self.use_frame_range else (None, None)
        clips = {}
        actions = self.actions(context)
        clouds, notes, dropped = sample_rotations(obj, names, actions, start, end, self.evaluated, context.scene, clips)
        counts = store_clouds(obj, clouds, self.append, self.densify, self.min_spacing, clips)
        for note in notes[:5]:
            self.report({"WARNING"}, note)
        skipped = len(names) - len(counts)
        msg = f"Sampled {plural(len(counts), 'bone')}, {sum(counts.values())} rotations"
        msg += f"; {skipped} without keys" if skipped else ""
        msg += f"; {dropped_message(dropped)}" if dropped else ""
        self.report({"INFO"}, msg)
        return {"FINISHED"}
