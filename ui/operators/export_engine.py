# SPDX-License-Identifier: GPL-3.0-or-later
import bpy
from bpy.props import EnumProperty, FloatProperty, StringProperty
from bpy_extras.io_utils import ExportHelper

from ...limits.export.engine_export import ENGINES, SUFFIXES
from ...limits.export.engine_limits import DEFAULT_BREAK_MARGIN_DEG, TARGET_SHARE
from ...rig.io.bone_errors import SkippedBones
from ...rig.tasks.export import TEXT_NAME, report_lines, rig_export, write_export
from ._common import armature_in_pose_mode, plural, progress, report_done, selected_bones_with_samples

FORMAT_ITEMS = (
    ("physx", "PhysX D6", "PxD6Joint twist range and elliptical swing cone (radians), joint frames in PhysX axes"),
    ("unreal", "Unreal", "Physics asset constraint: Swing1, Swing2 and Twist limits in degrees"),
    ("jolt", "Jolt", "SwingTwistConstraint, cone and pyramid swing, twist min/max (radians)"),
    ("godot", "Godot", "JointLimitationCone3D (ChainIK3D): a cone about the bone; twist is not limited"),
    ("usd", "USD Physics", "A .usda layer: PhysicsSphericalJoint cones, twist as PhysicsLimitAPI:rotX"),
    ("vrm", "VRM spring bone", "VRMC_springBone_limit (1.0 draft) cone per joint; twist is not limited"),
    ("json", "Joint Limits JSON", "Every approximation and the learned limit itself, for engines without a format"),
)
assert {item[0] for item in FORMAT_ITEMS} == set(ENGINES)


def target_share_property(what):
    """The operator setting of how much of the learned limit ``what`` must accept."""
    return FloatProperty(
        name="Target Share",
        description=f"Share of the samples the learned limit accepts that {what} must accept",
        default=TARGET_SHARE,
        min=0.5,
        max=1.0,
    )


def break_margin_property(where):
    """The operator setting of Kelly's break margin (``where`` it goes)."""
    return FloatProperty(
        name="Break Margin",
        description=f"Degrees beyond the limit before the joint breaks (Kelly), {where}",
        default=DEFAULT_BREAK_MARGIN_DEG,
        min=0.0,
        max=180.0,
    )


class JOINTLIMITS_OT_export_engine(bpy.types.Operator, ExportHelper):
    """Write the selected bones' limits for a game or physics engine, one file for the rig: per bone the engine's cone or pyramid and twist limits fitted to its samples, how faithful they are, the break margin and the rest frame; the fidelity also goes to the text 'Joint Limits Engine Export'"""

    bl_idname = "pose.joint_limits_export_engine"
    bl_label = "Export Engine Limits"
    filename_ext = ".json"
    filter_glob: StringProperty(description="Files shown in the file browser", default="*.json;*.usda", options={"HIDDEN"})
    format: EnumProperty(name="Format", description="Engine to write the limits for", items=FORMAT_ITEMS, default="physx")
    target: target_share_property("each approximation")
    break_margin: break_margin_property("for bones whose limit has none")

    @classmethod
    def poll(cls, context):
        return armature_in_pose_mode(cls, context)

    def check(self, context):
        """Keep the file name's extension that of the format (.usda for USD, else .json)."""
        wanted = SUFFIXES[self.format]
        if self.filepath and not self.filepath.endswith(wanted):
            self.filepath = bpy.path.ensure_ext(self.filepath.removesuffix(".json").removesuffix(".usda"), wanted)
            return True
        return False

    def execute(self, context):
        self.check(context)
        obj = context.object
        bones = selected_bones_with_samples(context)
        skipped = SkippedBones()
        with progress(context, len(bones)) as update:
            data = rig_export(obj, [pb.name for pb in bones], self.format, self.target, self.break_margin, skipped, update)
        path = write_export(self.filepath, data)
        lines = report_lines(data)
        for line in lines:
            print(f"Joint Limits engine export ({self.format}): {line}")
        text = bpy.data.texts.get(TEXT_NAME) or bpy.data.texts.new(TEXT_NAME)
        text.from_string(f"{self.format} export of {obj.name} to {path}\n" + "\n".join(lines) + "\n")
        worst = min(
            (approx["fidelity"]["sample_share"], entry["bone"])
            for entry in data["bones"]
            for approx in entry["approximations"].values()
        )
        report_done(
            self,
            f"Exported {plural(len(data['bones']), 'bone')} for {self.format} to {path.name}: samples accepted "
            f"{100 * worst[0]:.1f}% at worst ({worst[1]}; see text '{TEXT_NAME}')",
            skipped,
        )
        return {"FINISHED"}


def menu_export(self, context):
    """File > Export entry."""
    self.layout.operator(JOINTLIMITS_OT_export_engine.bl_idname, text="Joint Limits for Engines (.json, .usda)")
