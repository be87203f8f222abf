terraform {
  required_version = ">= 1.5"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.10, < 8"
    }
  }
}

provider "google" {
  project = var.project_id
  region  = var.region
}
