model m {
  input x: f32[batch, 8]
  y = prim.cast(x, dtype: "f16")
  output y
}
