import train
train.main(steps=5)
