// SPDX-License-Identifier: GPL-3.0-or-later
//
// Fragment shader of the swing sphere overlay: the swing direction under the fragment is
// looked up in a sinus-texture style image (the bone's own sinus texture, or any limit model
// sampled onto the sphere by limits/pose_helper.py: sample_limit). Allowed swings get the
// stress ramp colour_allowed (stress 0) .. colour_stressed (stress 1), forbidden swings
// colour_forbidden: the twin of pose_helper.colours.
// Requires: sinus_texture_lookup.glsl
//
//   limit_image  the image padded by one texel across the layout's seams, RGBA32F
//                (mask, twist min, twist max, stress), as in sinus_texture_compute.glsl
//   layout_id    index in limits.sphere_maps.LAYOUTS

#ifndef JL_CREATE_INFO
// Standalone declarations, for glslangValidator only (rig/overlay.py builds the interface).
in vec3 direction;
out vec4 frag_colour;
uniform sampler2D limit_image;
uniform int layout_id;
uniform vec4 colour_allowed;
uniform vec4 colour_stressed;
uniform vec4 colour_forbidden;
#endif

void main()
{
  vec3 d = normalize(direction);
  ivec2 size = sinus_size(limit_image);
  vec2 uv = sinus_uv(d, layout_id);
  if (sinus_allowed(limit_image, sinus_texel(uv, size))) {
    float stress = clamp(sinus_bilinear(limit_image, uv, size).w, 0.0, 1.0);
    frag_colour = mix(colour_allowed, colour_stressed, stress);
  }
  else {
    frag_colour = colour_forbidden;
  }
}
