# a type condition: dense with 16 output features only
dense16_relu: nn.relu(nn.dense(_, _) : Tensor[(?, 16), float32])
# attribute conditions: stride-1 3x3 convolutions with padding 1 only
conv_s1: nn.conv2d(_, _){strides=[1, 1], padding=[1, 1, 1, 1]}
