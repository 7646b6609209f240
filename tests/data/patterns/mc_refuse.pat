# relu(conv) at %1: refused, the conv %0 is also used by add %2
conv_relu: nn.relu(nn.conv2d(_, _))
# consumers first: the last two relus, then the add's relu has a relu input that is claimed
relu_relu: nn.relu(nn.relu(_))
# overlaps every claimed relu: only add %2 is left for it
add_any: add(_, _)
