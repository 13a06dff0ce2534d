// SPDX-License-Identifier: GPL-3.0-or-later
//
// Compute shader: applies the sinus-texture lookup library to a texture of quaternions, one
// invocation per rotation (rig/gpu.py: gpu_sinus_lookup).
// Requires: sinus_texture_lookup.glsl
//
// Rotation i lives at texel (i % row_width, i / row_width) of every texture below.
//   quaternions   RGBA32F, vec4(w, x, y, z)
//   limit_image   the model's image padded by one texel across seams, RGBA32F
//   nearest_table the model's nearest-boundary table, RGBA32F (.xyz)
//   out_rotation  RGBA32F: SinusTextureLimit.project
//   out_lookup    RGBA32F: (contains 0 / 1, stress, swing texel allowed 0 / 1, twist)
// Push constants: count (rotations), row_width, layout_id (index in sphere_maps.LAYOUTS).

#ifndef JL_CREATE_INFO
// Standalone declarations, for glslangValidator only: in Blender the interface comes from
// the GPUShaderCreateInfo built in rig/gpu.py, which defines JL_CREATE_INFO.
layout(local_size_x = 64) in;
uniform sampler2D quaternions;
uniform sampler2D limit_image;
uniform sampler2D nearest_table;
layout(rgba32f) writeonly uniform image2D out_rotation;
layout(rgba32f) writeonly uniform image2D out_lookup;
uniform int count;
uniform int row_width;
uniform int layout_id;
#endif

void main()
{
  ivec2 p = ivec2(gl_GlobalInvocationID.xy);
  if (p.x >= row_width || p.y * row_width + p.x >= count) {
    return;
  }
  vec4 q = texelFetch(quaternions, p, 0);
  vec4 projected = q;
  vec4 lookup = vec4(0.0, sinus_nan(), 0.0, sinus_nan());
  if (sinus_valid(q)) {
    SinusSample r = sinus_sample(limit_image, layout_id, q);
    lookup = vec4(sinus_inside(r) ? 1.0 : 0.0,
                  sinus_stress(limit_image, layout_id, q),
                  r.allowed ? 1.0 : 0.0,
                  r.twist);
    projected = sinus_project(limit_image, nearest_table, layout_id, q);
  }
  imageStore(out_rotation, p, projected);
  imageStore(out_lookup, p, lookup);
}
