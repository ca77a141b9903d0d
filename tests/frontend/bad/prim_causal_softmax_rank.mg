# issue 14: causal_softmax masks row i of each [rows, columns] matrix of the last
# two axes, so it needs rank >= 2
model m {
  input x: f32[batch, 4]
  y = prim.causal_softmax(prim.reshape(x, 4 * batch), scale: 0.5)
  output y
}
