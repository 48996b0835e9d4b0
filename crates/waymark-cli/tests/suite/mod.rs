mod cli;
mod crash;
mod plan;
mod support;
