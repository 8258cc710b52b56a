"""Packaging for elegantrl."""

from setuptools import find_packages, setup

with open("README.md", encoding="utf-8") as file:
    long_description = file.read()

setup(
    name="elegantrl",
    version="0.1.0",
    description="Lightweight, efficient and stable deep reinforcement learning in PyTorch",
    long_description=long_description,
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    packages=find_packages(include=["elegantrl", "elegantrl.*"]),
    python_requires=">=3.9",
    install_requires=[
        "torch>=2.0,<3",
        "numpy>=1.22",
        "gymnasium>=1.1,<2",
        "matplotlib>=3.5",
    ],
    extras_require={
        "box2d": ["gymnasium[box2d]>=1.1,<2"],
        "test": ["pytest>=7", "pytest-timeout>=2", "pytest-xdist>=3", "gymnasium[box2d]>=1.1,<2", "nbclient>=0.7", "nbformat>=5",
                 "ipykernel>=6", "tensorboard>=2.10",
                 "stable-baselines3>=2.3", "sb3-contrib>=2.3"],  # SB3's env checker in the tests; both for the benchmark rows' tests
        "tensorboard": ["tensorboard>=2.10"],
        "bench": ["stable-baselines3>=2.3", "sb3-contrib>=2.3", "gymnasium[box2d]>=1.1,<2"],
    },
    entry_points={"console_scripts": ["elegantrl=elegantrl.run:main"]},
    classifiers=[
        "Programming Language :: Python :: 3",
        "License :: OSI Approved :: Apache Software License",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
