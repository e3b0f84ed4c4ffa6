"""Classic control as level families: CartPole, Acrobot, MountainCar (discrete and
continuous) and Pendulum, each Gymnasium's environment by default, with the physics as the
level (DR generators, mutators and held-out levels; see `.physics`)."""

from arenax.envs.classic.acrobot import AcrobotEnv, AcrobotLevel
from arenax.envs.classic.cartpole import CartPoleEnv, CartPoleLevel
from arenax.envs.classic.mountain_car import (
    ContinuousMountainCarEnv,
    ContinuousMountainCarLevel,
    MountainCarEnv,
    MountainCarLevel,
)
from arenax.envs.classic.pendulum import PendulumEnv, PendulumLevel
from arenax.envs.classic.physics import ClassicEnv, ClassicState, Constant

#: registry name -> family, with Gymnasium's id of its default level
FAMILIES = {
    "cartpole": (CartPoleEnv, "CartPole-v1"),
    "acrobot": (AcrobotEnv, "Acrobot-v1"),
    "mountain-car": (MountainCarEnv, "MountainCar-v0"),
    "mountain-car-continuous": (ContinuousMountainCarEnv, "MountainCarContinuous-v0"),
    "pendulum": (PendulumEnv, "Pendulum-v1"),
}

__all__ = [
    "FAMILIES",
    "AcrobotEnv",
    "AcrobotLevel",
    "CartPoleEnv",
    "CartPoleLevel",
    "ClassicEnv",
    "ClassicState",
    "Constant",
    "ContinuousMountainCarEnv",
    "ContinuousMountainCarLevel",
    "MountainCarEnv",
    "MountainCarLevel",
    "PendulumEnv",
    "PendulumLevel",
]
