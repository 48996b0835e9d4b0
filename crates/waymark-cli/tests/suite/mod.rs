mod cli;
mod crash;
mod goal;
mod plan;
mod red_team;
mod support;
