"""The twin: the virtual followers' servo model fitted to a recording of a person's own arms (so101-fit).

recording.py   a LeRobot recording of followers, per arm, in degrees (units and joint map as the replay reads them)
replay.py      recorded goals through the emulated follower: the whole arm, or one joint alone (the fit's inner loop)
fit.py         the model's free rows fitted per arm and, where the recording moves a joint enough, per joint
fidelity.py    lag, tracking error and gravity sag per joint, real against emulated, on held-out episodes
plot.py        one held-out episode, real and emulated, on the same axes
"""
