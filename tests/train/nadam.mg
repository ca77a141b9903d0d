# nadam.mg - (the nadam_update op) Nadam (the momentum-cache product) with weight decay and global_clipnorm: 2 and 4 devices must train what 1 device trains
# (tests/train.cmake)
use nn

model nadam_mlp {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  x = dense(flatten(image), 64, activation: tanh)
  logits = dense(x, 10)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train nadam_mlp {
  optimizer = nadam(learning_rate: 0.001, weight_decay: 0.01, global_clipnorm: 1.0)
  batch = 64 global
}
