"""Attribution patching: the head and patching grids estimated at once, the largest cells checked exactly."""
