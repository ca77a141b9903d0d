model m {
  input x: f32[batch, 8]
  y = prim.dropout(x, rate: "half")
  output y
}
