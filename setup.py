from setuptools import setup

setup(cffi_modules=["flexdelegate/native/_build.py:ffibuilder"])
