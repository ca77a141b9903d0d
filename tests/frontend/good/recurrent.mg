# recurrent.mg - Keras LSTM and GRU param shapes and counts (issue 13):
# LSTM 4 * units * (f + units + 1), GRU (reset_after) 3 * units * (f + units + 2);
# a per-token loss and perplexity on [b, t, vocab] logits
use nn

model seq {
  input x: f32[batch, 6, 8]
  input y: i32[batch, 6]
  h = lstm(x, 16, return_sequences: true)
  h = gru(h, 12, return_sequences: true)
  logits = prim.reshape(prim.matmul(prim.reshape(h, batch * 6, 12), prim.broadcast_to(0.5, 12, 5)), batch, 6, 5)
  loss = sparse_softmax_cross_entropy(logits, y)
  metric perplexity = perplexity(logits, y)
  output last = lstm(x, 3)
}

train seq {
  optimizer = adam
  batch = 4 per replica
}
