use nn
model m {
  input x: f32[batch, 4]
  param a: f32[4] = constant("one")
  param b: f32[4] = truncated_normal(stddev: -0.1)
  param c: f32[4] = random_normal(mean: 1.0)
  param d: f32[4] = glorot_uniform(1)
  param e: f32[4] = constant(0.5, 1)
  param f: f32[4] = orthogonal
  y = x * a * b * c * d * e * f
  output y
}
