from enum import StrEnum

class RuntimeAdapter(StrEnum):
    CLOUDFLARE = "cloudflare"
    DOCKER = "docker"
    K3S = "k3s"
    K8S = "k8s"
    LOCAL = "local"
    MICROVM = "microvm"

    def __str__(self) -> str:
        return str(self.value)
