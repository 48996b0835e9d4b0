mod cli;
mod crash;
mod goal;
mod plan;
mod support;
