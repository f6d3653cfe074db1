// Fixture for the layering checker.
#pragma once
