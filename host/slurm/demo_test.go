package slurm

func demoHost(string) int { return 1 }
