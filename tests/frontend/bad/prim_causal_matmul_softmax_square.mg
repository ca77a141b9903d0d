# issue 14: causal_matmul_softmax's scores are square (each position against each)
model m {
  input q: f32[batch, 4, 8]
  input k: f32[batch, 8, 6]
  y = prim.causal_matmul_softmax(q, k, scale: 0.5)
  output y
}
