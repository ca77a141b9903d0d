# lamb.mg - (the lamb_update op) Lamb (per-layer trust ratio ||w|| / ||update||) with weight decay,
# clipnorm and a cosine schedule: 2 and 4 devices must train what 1 device
# trains (tests/train.cmake)
use nn

model lamb_mlp {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  x = dense(flatten(image), 64, activation: relu)
  logits = dense(x, 10)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train lamb_mlp {
  optimizer = lamb(learning_rate: cosine_decay(0.01, decay_steps: 20), weight_decay: 0.01, clipnorm: 0.5)
  batch = 64 global
}
