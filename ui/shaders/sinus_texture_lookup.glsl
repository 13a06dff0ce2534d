// SPDX-License-Identifier: GPL-3.0-or-later
//
// Sinus-texture joint limit lookups on the GPU: a function library (no main, no resources),
// the GLSL twin of limits/sinus_texture.py (SinusTextureLimit.contains / project / stress)
// and the forward maps of limits/sphere_maps.py. Prepended to a shader's source by rig/gpu.py.
//
// Conventions (as in numpy):
//   - rotations are quaternions vec4(w, x, y, z), reference-relative, any norm > 0;
//   - the swing direction is d = q (+Y) q*, the twist the angle about +Y in (-pi, pi];
//   - a texture of H rows and W columns covers [0, 1)^2: column floor(u W), row floor(v H),
//     row 0 is v = 0 (the bottom row, numpy row 0). texelFetch(ivec2(column, row)).
//
// Textures (float32, read with texelFetch only: no hardware filtering or wrapping):
//   image    the model's image padded by one texel across the layout's seams
//            (sphere_maps.padded): (W + 2) x (H + 2) RGBA32F, channels mask, twist min,
//            twist max, stress. Texel (col, row) of the model is (col + 1, row + 1) here.
//   nearest  the model's nearest-boundary table, W x H, direction in .xyz.
//
// The mask is read at the texel holding d (nearest texel); twist ranges and stress are
// bilinear between texel centres, computed in the padded texture exactly as numpy does
// (SinusTextureLimit._lookup / _bilinear_pair).

// Layout ids: indices into limits.sphere_maps.LAYOUTS.
const int SINUS_LAYOUT_EQUAL_AREA = 0;
const int SINUS_LAYOUT_OCTAHEDRAL = 1;
const int SINUS_LAYOUT_KELLY = 2;

const float SINUS_PI = 3.14159265358979;
// limits.sinus_texture.CONTAINS_TOLERANCE (below float32 resolution; kept for symmetry).
const float SINUS_CONTAINS_TOLERANCE = 1e-9;

// |mag| with the sign bit of sgn (numpy.copysign, including -0.0).
float sinus_copysign(float mag, float sgn)
{
  uint bits = (floatBitsToUint(mag) & 0x7fffffffu) | (floatBitsToUint(sgn) & 0x80000000u);
  return uintBitsToFloat(bits);
}

float sinus_nan()
{
  return uintBitsToFloat(0x7fc00000u);
}

// A finite rotation that is not the zero vector (numpy's _safe_rows).
bool sinus_valid(vec4 q)
{
  bool finite = !(any(isnan(q)) || any(isinf(q)));
  return finite && any(notEqual(q, vec4(0.0)));
}

// atan(y, x) refined by one Newton step. Some drivers' atan is far less accurate than
// float32 (Mesa llvmpipe: 3e-6 rad, which moves bilinear lookups by 1e-4 texel); sin and cos
// are accurate, and the step brings the error to ~1e-7. Defined (0) for x = y = 0.
float sinus_atan(float y, float x)
{
  float r = sqrt(x * x + y * y);
  if (r == 0.0) {
    return 0.0;
  }
  float p = atan(y, x);
  return p - (sin(p) * x - cos(p) * y) / r;
}

// -- rotations <-> (direction, twist) ------------------------------------------------------------
// Swing direction (xyz, unit) and twist angle (w) of q (sinus_texture._direction_twist).
vec4 sinus_direction_twist(vec4 q)
{
  float w = q.x, x = q.y, y = q.z, z = q.w;
  float ww = w * w, xx = x * x, yy = y * y, zz = z * z;
  float n2 = ((ww + xx) + yy) + zz;
  float inv = 2.0 / n2;
  float dx = (x * y - w * z) * inv;
  float dy = (((ww - xx) + yy) - zz) / n2;
  float dz = (y * z + w * x) * inv;
  float sy = (w < 0.0) ? -y : y;
  float aw = abs(w);
  // aw >= 0, so this is numpy's arctan2(sy, aw) (0 for sy = aw = 0)
  return vec4(dx, dy, dz, 2.0 * sinus_atan(sy, aw));
}

// The rotation twist radians about +Y, then the shortest swing taking +Y to the unit
// direction d (d = -Y: the half turn about X); sinus_texture._compose.
vec4 sinus_compose(vec3 d, float twist)
{
  float s2 = 2.0 * (1.0 + d.y);
  float a, b, e;
  if (s2 <= 1e-24) {
    a = 0.0;
    b = 1.0;
    e = 0.0;
  }
  else {
    float inv = 1.0 / sqrt(s2);
    a = (1.0 + d.y) * inv;
    b = d.z * inv;
    e = -d.x * inv;
  }
  float t = tan(0.25 * twist);
  float t2 = t * t;
  float k = 1.0 / (1.0 + t2);
  float c = (1.0 - t2) * k;
  float s = 2.0 * t * k;
  return vec4(a * c, b * c - e * s, a * s, b * s + e * c);
}

// -- direction -> texture coordinates (sphere_maps._FORWARD) -------------------------------------
// Clarberg's equal-area octahedral map centred on +Y (sphere_maps._equal_area_forward).
vec2 sinus_equal_area_uv(vec3 d)
{
  float ax = abs(d.x), az = abs(d.z);
  // r = sqrt(1 - |y|), written (x^2 + z^2) / (1 + |y|) to avoid cancellation near +-Y
  float r = sqrt((d.x * d.x + d.z * d.z) / (abs(d.y) + 1.0));
  float a = max(max(ax, az), 1e-30);
  float b = min(ax, az) / a;
  float phi = sinus_atan(b, 1.0) * (2.0 / SINUS_PI);
  if (ax < az) {
    phi = 1.0 - phi;
  }
  float s = phi * r;  // along z
  float t = r - s;    // along x
  if (d.y < 0.0) {
    float s_low = 1.0 - t;
    t = 1.0 - s;
    s = s_low;
  }
  return vec2((sinus_copysign(t, d.x) + 1.0) * 0.5, (sinus_copysign(s, d.z) + 1.0) * 0.5);
}

// The plain octahedral map (sphere_maps._octahedral_forward).
vec2 sinus_octahedral_uv(vec3 d)
{
  float n = abs(d.x) + abs(d.y) + abs(d.z);
  float px = d.x / n, pz = d.z / n;
  float a = px, b = pz;
  if (d.y < 0.0) {
    a = (1.0 - abs(pz)) * sinus_copysign(1.0, px);
    b = (1.0 - abs(px)) * sinus_copysign(1.0, pz);
  }
  return vec2(0.5 * (a + 1.0), 0.5 * (b + 1.0));
}

// Kelly's two-hemisphere layout (sphere_maps._kelly_forward).
vec2 sinus_kelly_uv(vec3 d)
{
  float theta;
  if (d.y == 0.0 && d.z == 0.0) {
    // numpy: arctan2(+-0, +0) = +-0, arctan2(+-0, -0) = +-pi (then +2 pi if negative)
    theta = (floatBitsToUint(d.z) >> 31) != 0u ? SINUS_PI : 0.0;
  }
  else {
    theta = sinus_atan(d.y, d.z);
    if (theta < 0.0) {
      theta += 2.0 * SINUS_PI;
    }
  }
  float rho = min(sqrt(d.y * d.y + d.z * d.z), 1.0);
  return vec2(theta / (2.0 * SINUS_PI), (d.x >= 0.0) ? 0.5 * rho : 1.0 - 0.5 * rho);
}

vec2 sinus_uv(vec3 d, int layout_id)
{
  if (layout_id == SINUS_LAYOUT_KELLY) {
    return sinus_kelly_uv(d);
  }
  if (layout_id == SINUS_LAYOUT_OCTAHEDRAL) {
    return sinus_octahedral_uv(d);
  }
  return sinus_equal_area_uv(d);
}

// -- texture lookups -----------------------------------------------------------------------------
// The model's texture size (W, H) from the padded image.
ivec2 sinus_size(sampler2D image)
{
  return textureSize(image, 0) - ivec2(2);
}

// The texel (column, row) holding texture coordinates uv (sphere_maps.uv_to_texel).
ivec2 sinus_texel(vec2 uv, ivec2 size)
{
  ivec2 cell = min(ivec2(uv * vec2(size)), size - ivec2(1));
  return max(cell, ivec2(0));
}

bool sinus_allowed(sampler2D image, ivec2 texel)
{
  return texelFetch(image, texel + ivec2(1), 0).x > 0.5;
}

// Bilinear interpolation of the padded image's channels between texel centres at uv.
vec4 sinus_bilinear(sampler2D image, vec2 uv, ivec2 size)
{
  vec2 f = uv * vec2(size) + 0.5;  // padded coordinates (one texel border): x - 0.5 + 1
  ivec2 base = ivec2(f);           // f >= 0.5, so truncation is floor
  f -= vec2(base);
  vec4 c00 = texelFetch(image, base, 0);
  vec4 c01 = texelFetch(image, base + ivec2(1, 0), 0);
  vec4 c10 = texelFetch(image, base + ivec2(0, 1), 0);
  vec4 c11 = texelFetch(image, base + ivec2(1, 1), 0);
  float gx = 1.0 - f.x, gy = 1.0 - f.y;
  return ((c00 * (gx * gy) + c01 * (f.x * gy)) + c10 * (gx * f.y)) + c11 * (f.x * f.y);
}

// Twist range (min, max) in radians at uv.
vec2 sinus_twist_range(sampler2D image, vec2 uv, ivec2 size)
{
  return sinus_bilinear(image, uv, size).yz;
}

struct SinusSample {
  vec3 direction;
  float twist;
  ivec2 texel;
  bool allowed;
  vec2 range;
  vec2 uv;
};

SinusSample sinus_sample(sampler2D image, int layout_id, vec4 q)
{
  SinusSample r;
  ivec2 size = sinus_size(image);
  vec4 dt = sinus_direction_twist(q);
  r.direction = dt.xyz;
  r.twist = dt.w;
  r.uv = sinus_uv(dt.xyz, layout_id);
  r.texel = sinus_texel(r.uv, size);
  r.allowed = sinus_allowed(image, r.texel);
  r.range = sinus_twist_range(image, r.uv, size);
  return r;
}

bool sinus_inside(SinusSample r)
{
  return r.allowed && r.twist >= r.range.x - SINUS_CONTAINS_TOLERANCE &&
         r.twist <= r.range.y + SINUS_CONTAINS_TOLERANCE;
}

// -- the interface -------------------------------------------------------------------------------
// SinusTextureLimit.contains: the swing's texel is allowed and the twist lies in the range
// interpolated there. Non-finite and zero rotations are not contained.
bool sinus_contains(sampler2D image, int layout_id, vec4 q)
{
  if (!sinus_valid(q)) {
    return false;
  }
  return sinus_inside(sinus_sample(image, layout_id, q));
}

// SinusTextureLimit.stress: bilinear stress 0..1 at the swing; NaN for invalid rotations.
float sinus_stress(sampler2D image, int layout_id, vec4 q)
{
  if (!sinus_valid(q)) {
    return sinus_nan();
  }
  vec4 dt = sinus_direction_twist(q);
  return sinus_bilinear(image, sinus_uv(dt.xyz, layout_id), sinus_size(image)).w;
}

// SinusTextureLimit.project: a forbidden swing goes to the nearest-boundary table entry of its
// texel, then the twist is clamped to the range at the resulting swing; the quaternion is
// recomposed on the cover of q. Contained and invalid rotations are returned unchanged.
vec4 sinus_project(sampler2D image, sampler2D nearest, int layout_id, vec4 q)
{
  if (!sinus_valid(q)) {
    return q;
  }
  SinusSample r = sinus_sample(image, layout_id, q);
  if (sinus_inside(r)) {
    return q;
  }
  vec3 d = r.direction;
  vec2 range = r.range;
  if (!r.allowed) {
    d = texelFetch(nearest, r.texel, 0).xyz;
    range = sinus_twist_range(image, sinus_uv(d, layout_id), sinus_size(image));
  }
  // numpy.clip order (clamp is undefined for min > max)
  vec4 result = sinus_compose(d, min(max(r.twist, range.x), range.y));
  return (dot(result, q) < 0.0) ? -result : result;
}
